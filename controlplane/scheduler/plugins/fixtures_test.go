package plugins

import (
	"context"
	"slices"
	"strings"
	"testing"

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

// labelMap reads "key", "value" pairs.
func labelMap(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func withLabels(kv ...string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels = labelMap(kv...) }
}

// zonedNode returns a node labelled with its hostname, its zone and the
// extra "key", "value" pairs.
func zonedNode(name, zone string, extra ...string) *corev1.Node {
	kv := append([]string{corev1.LabelHostname, name, corev1.LabelTopologyZone, zone}, extra...)
	return testNode(name, withLabels(kv...))
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

// appPod returns a pod labelled app=app, changed by opts.
func appPod(name, app string, opts ...func(*corev1.Pod)) *corev1.Pod {
	return testPod(name, nil, append([]func(*corev1.Pod){withPodLabels("app", app)}, opts...)...)
}

func withPodLabels(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels = labelMap(kv...) }
}

func inNamespace(ns string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Namespace = ns }
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

// cluster returns each node's view with placed[node name]'s pods on it.
func cluster(nodes []*corev1.Node, placed map[string][]*corev1.Pod) []*framework.NodeInfo {
	out := make([]*framework.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = testNodeInfo(n, placed[n.Name]...)
	}
	return out
}

type preFilterFilter interface {
	framework.PreFilterPlugin
	framework.FilterPlugin
}

// runCycleFilter runs p's PreFilter over nodes, then its Filter on each node
// in the same cycle, as the scheduler does. It returns the reasons of the
// nodes that do not fit, by node name, or a PreFilter rejection under
// "PreFilter".
func runCycleFilter(p preFilterFilter, pod *corev1.Pod, nodes []*framework.NodeInfo) map[string][]string {
	state := framework.NewCycleState()
	if st := p.PreFilter(context.Background(), state, pod, nodes); st != nil {
		return map[string][]string{"PreFilter": st.Reasons}
	}
	out := map[string][]string{}
	for _, ni := range nodes {
		if st := p.Filter(context.Background(), state, pod, ni); st != nil {
			out[ni.Node.Name] = st.Reasons
		}
	}
	return out
}

type preFilterScore interface {
	framework.PreFilterPlugin
	framework.ScorePlugin
	framework.ScoreNormalizer
}

// runCycleScores runs p's PreFilter over nodes, then its Score on each node
// in the same cycle, and returns the raw scores node by node and the same
// after NormalizeScores.
func runCycleScores(t *testing.T, p preFilterScore, pod *corev1.Pod, nodes []*framework.NodeInfo) (raw, normalized []int64) {
	t.Helper()
	state := framework.NewCycleState()
	if st := p.PreFilter(context.Background(), state, pod, nodes); st != nil {
		t.Fatalf("PreFilter rejected the pod: %q", st.Reasons)
	}
	raw = make([]int64, len(nodes))
	for i, ni := range nodes {
		raw[i] = p.Score(context.Background(), state, pod, ni)
	}
	normalized = slices.Clone(raw)
	p.NormalizeScores(normalized)
	return raw, normalized
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
