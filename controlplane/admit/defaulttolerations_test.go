package admit

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestDefaultTolerationSeconds(t *testing.T) {
	seconds := func(s int64) *int64 { return &s }
	notReady := v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}
	unreachable := v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}
	ownNotReady := v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists,
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds(60)}
	tolerateAll := v1.Toleration{Operator: v1.TolerationOpExists}
	noSchedule := v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	anyEffect := v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists}
	for _, tt := range []struct {
		name       string
		have, want []v1.Toleration
	}{
		{"none: both added with 300s", nil, []v1.Toleration{notReady, unreachable}},
		{"not-ready already tolerated", []v1.Toleration{ownNotReady}, []v1.Toleration{ownNotReady, unreachable}},
		{"everything tolerated", []v1.Toleration{tolerateAll}, []v1.Toleration{tolerateAll}},
		{"NoSchedule does not count", []v1.Toleration{noSchedule}, []v1.Toleration{noSchedule, notReady, unreachable}},
		{"empty effect counts", []v1.Toleration{anyEffect}, []v1.Toleration{anyEffect, notReady}},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Tolerations: tt.have}}
		a := attrs(admission.Create, podsResource, "", "ns", "p", pod, nil, &user.DefaultInfo{Name: "bob"})
		if err := NewDefaultTolerationSeconds().Admit(t.Context(), a, nil); err != nil || !reflect.DeepEqual(pod.Spec.Tolerations, tt.want) {
			t.Errorf("%s: %v tolerations = %+v\nwant %+v", tt.name, err, pod.Spec.Tolerations, tt.want)
		}
	}
	// An update that replaces the tolerations gets the defaults back (it
	// may not drop them), as kube-apiserver's plugin gives them.
	plugin := NewDefaultTolerationSeconds()
	if !plugin.Handles(admission.Update) {
		t.Fatal("the plugin does not handle updates")
	}
	old := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Tolerations: []v1.Toleration{notReady, unreachable}}}
	updated := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Tolerations: []v1.Toleration{noSchedule}}}
	a := attrs(admission.Update, podsResource, "", "ns", "p", updated, old, &user.DefaultInfo{Name: "bob"})
	if err := plugin.Admit(t.Context(), a, nil); err != nil || !reflect.DeepEqual(updated.Spec.Tolerations, []v1.Toleration{noSchedule, notReady, unreachable}) {
		t.Errorf("update: %v tolerations = %+v", err, updated.Spec.Tolerations)
	}
}
