package scheduler

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func withPriority(p int32) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { pod.Spec.Priority = ptr(p) }
}

func victimNames(p preemption) []string {
	var names []string
	for _, v := range p.victims {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	return names
}

// Preemption picks the node whose victims matter least, and of its lower
// pods only as many as the preemptor needs.
func TestPreempt(t *testing.T) {
	nodes := []*corev1.Node{testNode("a", "2"), testNode("b", "2"), testNode("c", "2")}
	existing := []*corev1.Pod{
		boundTo(testPod("a-low", "1", withPriority(1)), "a"), boundTo(testPod("a-mid", "1", withPriority(5)), "a"),
		boundTo(testPod("b-mid1", "1", withPriority(5)), "b"), boundTo(testPod("b-mid2", "1", withPriority(5)), "b"),
		boundTo(testPod("c-high", "1", withPriority(100)), "c"), boundTo(testPod("c-high2", "1", withPriority(100)), "c"),
	}
	d := newDecider(t, Config{})
	snap := newSnapshot(nodeInfos(nodes, existing...))
	critical := testPod("critical", "1", withPriority(50))
	if _, err := d.decide(context.Background(), critical, snap); err == nil {
		t.Fatal("the preemptor fits without preemption")
	}
	p, ok := d.preempt(context.Background(), critical, snap)
	if !ok || p.node != "a" || !slices.Equal(victimNames(p), []string{"a-low"}) {
		t.Errorf("preemption %+v, %v: want a-low on a", p, ok)
	}

	big := testPod("big", "2", withPriority(50))
	if p, ok := d.preempt(context.Background(), big, snap); !ok || p.node != "a" || !slices.Equal(victimNames(p), []string{"a-low", "a-mid"}) {
		t.Errorf("preemption of a 2-cpu pod %+v, %v: want both pods of a (as important at most as b's, fewer priorities in sum)", p, ok)
	}

	never := testPod("never", "1", withPriority(50), func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr(corev1.PreemptNever) })
	if _, ok := d.preempt(context.Background(), never, snap); ok {
		t.Error("a pod with preemptionPolicy Never preempted")
	}
	low := testPod("low", "1", withPriority(0))
	if _, ok := d.preempt(context.Background(), low, snap); ok {
		t.Error("a pod of the lowest priority preempted")
	}

	// Its victims still terminating, a nominated pod waits.
	going := boundTo(testPod("a-low", "1", withPriority(1)), "a")
	going.DeletionTimestamp = &metav1.Time{}
	waiting := critical.DeepCopy()
	waiting.Status.NominatedNodeName = "a"
	snap = newSnapshot(nodeInfos(nodes, going, existing[1], existing[2], existing[3], existing[4], existing[5]))
	if _, ok := d.preempt(context.Background(), waiting, snap); ok {
		t.Error("preempted again while the victims terminate")
	}
}

// The conformance spec's case: one unit of an extended resource on one
// node, the preemptor pinned there by a metadata.name field selector.
func TestPreemptExtendedResourcePinned(t *testing.T) {
	foo := corev1.ResourceName("scheduling.k8s.io/foo")
	nodes := []*corev1.Node{testNode("a", "2"), testNode("b", "2", func(n *corev1.Node) { n.Status.Allocatable[foo] = resource.MustParse("1") })}
	pinned := func(name string, prio int32) *corev1.Pod {
		return testPod(name, "", withPriority(prio), func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{foo: resource.MustParse("1")}
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{foo: resource.MustParse("1")}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
					{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}}
		})
	}
	d := newDecider(t, Config{})
	snap := newSnapshot(nodeInfos(nodes, boundTo(pinned("victim", 1), "b")))
	if p, ok := d.preempt(context.Background(), pinned("preemptor", 1000), snap); !ok || p.node != "b" || len(p.victims) != 1 {
		t.Errorf("preemption %+v, %v: want the victim on b", p, ok)
	}
}
