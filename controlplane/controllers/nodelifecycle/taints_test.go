package nodelifecycle

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect}
}

func TestDesiredTaints(t *testing.T) {
	cond := func(typ corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: s}
	}
	const (
		noSched = corev1.TaintEffectNoSchedule
		noExec  = corev1.TaintEffectNoExecute
	)
	cases := []struct {
		name          string
		conds         []corev1.NodeCondition
		unschedulable bool
		want          []corev1.Taint
	}{
		{name: "ready: none", conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue)}},
		{name: "not ready", conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)},
			want: []corev1.Taint{taint(corev1.TaintNodeNotReady, noSched), taint(corev1.TaintNodeNotReady, noExec)}},
		{name: "unknown: unreachable", conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)},
			want: []corev1.Taint{taint(corev1.TaintNodeUnreachable, noSched), taint(corev1.TaintNodeUnreachable, noExec)}},
		{name: "no Ready condition yet: none", conds: nil},
		{name: "pressure and unschedulable", unschedulable: true, conds: []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionTrue), cond(corev1.NodeMemoryPressure, corev1.ConditionTrue),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse), cond(corev1.NodePIDPressure, corev1.ConditionTrue),
			cond(corev1.NodeNetworkUnavailable, corev1.ConditionTrue)},
			want: []corev1.Taint{taint(corev1.TaintNodeMemoryPressure, noSched), taint(corev1.TaintNodePIDPressure, noSched),
				taint(corev1.TaintNodeNetworkUnavailable, noSched), taint(corev1.TaintNodeUnschedulable, noSched)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := testNode(tc.conds...)
			node.Spec.Unschedulable = tc.unschedulable
			if got := desiredTaints(node); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestReconcileTaints(t *testing.T) {
	now := t0.Add(time.Minute)
	earlier := metav1.NewTime(t0)
	at := func(tt corev1.Taint, ts metav1.Time) corev1.Taint { tt.TimeAdded = &ts; return tt }
	unreachableExec := taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	notReadyExec := taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	unreachableSched := taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule)
	user := taint("example.com/dedicated", corev1.TaintEffectNoExecute)
	userUnreachable := taint(corev1.TaintNodeUnreachable, corev1.TaintEffectPreferNoSchedule)
	cases := []struct {
		name        string
		current     []corev1.Taint
		desired     []corev1.Taint
		want        []corev1.Taint
		wantChanged bool
	}{
		{name: "adds NoExecute with timeAdded, NoSchedule without",
			desired:     []corev1.Taint{unreachableSched, unreachableExec},
			want:        []corev1.Taint{unreachableSched, at(unreachableExec, metav1.NewTime(now))},
			wantChanged: true},
		{name: "keeps an existing taint's timeAdded",
			current: []corev1.Taint{unreachableSched, at(unreachableExec, earlier)},
			desired: []corev1.Taint{unreachableSched, unreachableExec},
			want:    []corev1.Taint{unreachableSched, at(unreachableExec, earlier)}},
		{name: "swaps unreachable for not-ready",
			current:     []corev1.Taint{at(unreachableExec, earlier)},
			desired:     []corev1.Taint{notReadyExec},
			want:        []corev1.Taint{at(notReadyExec, metav1.NewTime(now))},
			wantChanged: true},
		{name: "removes its taints when healthy, leaves the user's",
			current:     []corev1.Taint{user, unreachableSched, at(unreachableExec, earlier), userUnreachable},
			want:        []corev1.Taint{user, userUnreachable},
			wantChanged: true},
		{name: "nothing to do", current: []corev1.Taint{user}, want: []corev1.Taint{user}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := reconcileTaints(tc.current, tc.desired, now)
			if changed != tc.wantChanged || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v (changed %v)\nwant %v (changed %v)", got, changed, tc.want, tc.wantChanged)
			}
		})
	}
}
