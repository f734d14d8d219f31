package podgc

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(t0)}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func age(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-d)) }
}
func on(node string) podOpt  { return func(p *corev1.Pod) { p.Spec.NodeName = node } }
func deleting(p *corev1.Pod) { p.DeletionTimestamp = new(metav1.NewTime(t0)) }
func evicted(p *corev1.Pod) {
	p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestTerminatedToDelete(t *testing.T) {
	pods := []*corev1.Pod{
		pod("running-old", age(10*time.Hour)),
		pod("done-3h", phase(corev1.PodSucceeded), age(3*time.Hour)),
		pod("failed-5h", phase(corev1.PodFailed), age(5*time.Hour)),
		pod("done-1h", phase(corev1.PodSucceeded), age(time.Hour)),
		pod("evicted-new", evicted),
		pod("b-same-age", phase(corev1.PodSucceeded), age(2*time.Hour)),
		pod("a-same-age", phase(corev1.PodSucceeded), age(2*time.Hour)),
	}
	cases := []struct {
		threshold int
		want      []string
	}{
		{threshold: 10, want: []string{}},
		{threshold: 6, want: []string{}},
		{threshold: 5, want: []string{"evicted-new"}},
		{threshold: 3, want: []string{"evicted-new", "failed-5h", "done-3h"}},
		{threshold: 1, want: []string{"evicted-new", "failed-5h", "done-3h", "a-same-age", "b-same-age"}},
		{threshold: 0, want: []string{}},
		{threshold: -1, want: []string{}},
	}
	for _, tc := range cases {
		got := names(terminatedToDelete(pods, tc.threshold))
		if !slices.Equal(got, tc.want) {
			t.Errorf("threshold %d: %v, want %v", tc.threshold, got, tc.want)
		}
	}
}

func TestOrphanSelection(t *testing.T) {
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	pods := []*corev1.Pod{pod("a", on("alive")), pod("b", on("gone")), pod("c", on("gone"), deleting), pod("d"), pod("e", on("new"))}
	missing := missingNodes(pods, []*corev1.Node{node("alive"), node("idle")})
	if !missing.Equal(sets.New("gone", "new")) {
		t.Errorf("missing %v", sets.List(missing))
	}
	if got := names(podsOn(pods, sets.New("gone"))); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("pods on gone nodes %v", got)
	}
}

func TestQuarantine(t *testing.T) {
	const period = 40 * time.Second
	q := quarantine{}
	steps := []struct {
		at       time.Duration
		missing  []string
		wantDue  []string
		wantNext time.Duration
	}{
		{at: 0, missing: []string{"n1"}, wantDue: []string{}, wantNext: 40 * time.Second},
		{at: 30 * time.Second, missing: []string{"n1", "n2"}, wantDue: []string{}, wantNext: 10 * time.Second},
		{at: 40 * time.Second, missing: []string{"n1", "n2"}, wantDue: []string{"n1"}, wantNext: 30 * time.Second},
		// n2 shows up in the cache after all: forgotten, and its clock
		// starts over if it goes missing again.
		{at: 50 * time.Second, missing: []string{"n1"}, wantDue: []string{"n1"}},
		{at: 60 * time.Second, missing: []string{"n1", "n2"}, wantDue: []string{"n1"}, wantNext: 40 * time.Second},
	}
	for i, s := range steps {
		due, next := q.due(sets.New(s.missing...), t0.Add(s.at), period)
		if !slices.Equal(sets.List(due), s.wantDue) || next != s.wantNext {
			t.Errorf("step %d: due %v next %s, want %v %s", i, sets.List(due), next, s.wantDue, s.wantNext)
		}
	}
}

func TestTerminatingSelection(t *testing.T) {
	outOfService := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "oos"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}}}
	readyOOS := outOfService.DeepCopy()
	readyOOS.Name = "ready-oos"
	readyOOS.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	pods := []*corev1.Pod{
		pod("unscheduled-deleting", deleting), pod("unscheduled"),
		pod("oos-deleting", on("oos"), deleting), pod("oos-running", on("oos")),
		pod("ready-oos-deleting", on("ready-oos"), deleting), pod("plain-deleting", on("plain"), deleting),
	}
	if got := names(unscheduledTerminating(pods)); !slices.Equal(got, []string{"unscheduled-deleting"}) {
		t.Errorf("unscheduled terminating %v", got)
	}
	if got := names(terminatingOutOfService(pods, []*corev1.Node{outOfService, readyOOS, plain})); !slices.Equal(got, []string{"oos-deleting"}) {
		t.Errorf("terminating out of service %v", got)
	}
}
