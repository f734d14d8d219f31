package plugins

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// Builders shared by the plugin tests.

// resList parses "name=quantity" pairs, e.g. resList("cpu=500m", "memory=1Gi").
func resList(pairs ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for _, p := range pairs {
		name, q, _ := strings.Cut(p, "=")
		rl[corev1.ResourceName(name)] = resource.MustParse(q)
	}
	return rl
}

// testNode returns a node with 4 cpu, 8Gi of memory and room for 110 pods,
// changed by opts.
func testNode(name string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Allocatable: resList("cpu=4", "memory=8Gi", "pods=110")},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withAllocatable(rl corev1.ResourceList) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Status.Allocatable = rl }
}

func withLabels(kv ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withTaints(ts ...corev1.Taint) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = ts }
}

func withCordon(n *corev1.Node) { n.Spec.Unschedulable = true }

// testPod returns a pod (UID = name) with one container requesting
// requests, changed by opts.
func testPod(name string, requests corev1.ResourceList, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{testContainer(requests)}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func testContainer(requests corev1.ResourceList, ports ...corev1.ContainerPort) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}, Ports: ports}
}

func withContainers(cs ...corev1.Container) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers = cs }
}

func withInitContainers(cs ...corev1.Container) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.InitContainers = cs }
}

func withTolerations(ts ...corev1.Toleration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Tolerations = ts }
}

// testNodeInfo returns node's view with pods already on it.
func testNodeInfo(node *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(node)
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// runFilter runs f for pod on ni in a fresh cycle and returns its reasons
// (nil when the node fits).
func runFilter(f framework.FilterPlugin, pod *corev1.Pod, ni *framework.NodeInfo) []string {
	st := f.Filter(context.Background(), framework.NewCycleState(), pod, ni)
	if st == nil {
		return nil
	}
	return st.Reasons
}

// runScores runs s for pod on every node in one cycle, then normalizes if s
// does, as the scheduler does.
func runScores(s framework.ScorePlugin, pod *corev1.Pod, nis ...*framework.NodeInfo) []int64 {
	state := framework.NewCycleState()
	out := make([]int64, len(nis))
	for i, ni := range nis {
		out[i] = s.Score(context.Background(), state, pod, ni)
	}
	if n, ok := s.(framework.ScoreNormalizer); ok {
		n.NormalizeScores(out)
	}
	return out
}
