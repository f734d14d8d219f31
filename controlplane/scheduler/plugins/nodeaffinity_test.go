package plugins

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

func selectorReq(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// labelTerm ANDs label requirements.
func labelTerm(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

// withRequired ORs terms into the pod's required node affinity.
func withRequired(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func withNodeSelector(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func TestNodeAffinityFilter(t *testing.T) {
	const mismatch = "node(s) didn't match Pod's node affinity/selector"
	node := testNode("node-a", withLabels("zone", "a", "disk", "ssd", "cpus", "8"))
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{name: "no selector or affinity fits", pod: testPod("p", nil)},
		{name: "nodeSelector matching", pod: testPod("p", nil, withNodeSelector("zone", "a", "disk", "ssd"))},
		{name: "nodeSelector with one label off", pod: testPod("p", nil, withNodeSelector("zone", "a", "disk", "hdd")), want: []string{mismatch}},
		{name: "nodeSelector on a missing label", pod: testPod("p", nil, withNodeSelector("gpu", "true")), want: []string{mismatch}},
		{name: "In matching", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("zone", corev1.NodeSelectorOpIn, "b", "a"))))},
		{name: "In not matching", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("zone", corev1.NodeSelectorOpIn, "b", "c")))), want: []string{mismatch}},
		{name: "NotIn not listing the value", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("zone", corev1.NodeSelectorOpNotIn, "b"))))},
		{name: "NotIn listing the value", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("zone", corev1.NodeSelectorOpNotIn, "a")))), want: []string{mismatch}},
		{name: "NotIn on a missing label", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("gpu", corev1.NodeSelectorOpNotIn, "true"))))},
		{name: "Exists present", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("disk", corev1.NodeSelectorOpExists))))},
		{name: "Exists missing", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("gpu", corev1.NodeSelectorOpExists)))), want: []string{mismatch}},
		{name: "DoesNotExist missing", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("gpu", corev1.NodeSelectorOpDoesNotExist))))},
		{name: "DoesNotExist present", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("disk", corev1.NodeSelectorOpDoesNotExist)))), want: []string{mismatch}},
		{name: "Gt below the value", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("cpus", corev1.NodeSelectorOpGt, "4"))))},
		{name: "Gt equal to the value", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("cpus", corev1.NodeSelectorOpGt, "8")))), want: []string{mismatch}},
		{name: "Lt above the value", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("cpus", corev1.NodeSelectorOpLt, "16"))))},
		{name: "Lt equal to the value", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("cpus", corev1.NodeSelectorOpLt, "8")))), want: []string{mismatch}},
		{name: "Gt on a non-integer label", pod: testPod("p", nil, withRequired(labelTerm(selectorReq("zone", corev1.NodeSelectorOpGt, "1")))), want: []string{mismatch}},
		{
			name: "expressions in a term are ANDed",
			pod: testPod("p", nil, withRequired(labelTerm(
				selectorReq("zone", corev1.NodeSelectorOpIn, "a"), selectorReq("disk", corev1.NodeSelectorOpIn, "hdd")))),
			want: []string{mismatch},
		},
		{
			name: "terms are ORed",
			pod: testPod("p", nil, withRequired(
				labelTerm(selectorReq("zone", corev1.NodeSelectorOpIn, "b")), labelTerm(selectorReq("disk", corev1.NodeSelectorOpIn, "ssd")))),
		},
		{
			name: "matchFields on metadata.name matching",
			pod: testPod("p", nil, withRequired(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				selectorReq("metadata.name", corev1.NodeSelectorOpIn, "node-a")}})),
		},
		{
			name: "matchFields on metadata.name not matching",
			pod: testPod("p", nil, withRequired(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				selectorReq("metadata.name", corev1.NodeSelectorOpIn, "node-b")}})),
			want: []string{mismatch},
		},
		{
			name: "nodeSelector and affinity must both match",
			pod: testPod("p", nil, withNodeSelector("zone", "a"),
				withRequired(labelTerm(selectorReq("disk", corev1.NodeSelectorOpIn, "hdd")))),
			want: []string{mismatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runFilter(NodeAffinity{}, tt.pod, testNodeInfo(node)); !slices.Equal(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNodeAffinityScore(t *testing.T) {
	withPreferred := func(prefs ...corev1.PreferredSchedulingTerm) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: prefs}}
		}
	}
	prefer := func(weight int32, reqs ...corev1.NodeSelectorRequirement) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: weight, Preference: labelTerm(reqs...)}
	}
	nodes := []*framework.NodeInfo{
		testNodeInfo(testNode("zone-a-ssd", withLabels("zone", "a", "disk", "ssd"))),
		testNodeInfo(testNode("zone-a-hdd", withLabels("zone", "a", "disk", "hdd"))),
		testNodeInfo(testNode("zone-b-ssd", withLabels("zone", "b", "disk", "ssd"))),
		testNodeInfo(testNode("unlabelled")),
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		raw        []int64 // Score, node by node
		normalized []int64
	}{
		{
			name:       "no preferences",
			pod:        testPod("p", nil),
			raw:        []int64{0, 0, 0, 0},
			normalized: []int64{0, 0, 0, 0},
		},
		{
			name: "weights of matched preferences are summed",
			pod: testPod("p", nil, withPreferred(
				prefer(10, selectorReq("zone", corev1.NodeSelectorOpIn, "a")),
				prefer(5, selectorReq("disk", corev1.NodeSelectorOpIn, "ssd")))),
			raw:        []int64{15, 10, 5, 0},
			normalized: []int64{100, 66, 33, 0},
		},
		{
			name: "expressions in a preference are ANDed",
			pod: testPod("p", nil, withPreferred(
				prefer(7, selectorReq("zone", corev1.NodeSelectorOpIn, "a"), selectorReq("disk", corev1.NodeSelectorOpIn, "ssd")))),
			raw:        []int64{7, 0, 0, 0},
			normalized: []int64{100, 0, 0, 0},
		},
		{
			name:       "a preference nothing matches",
			pod:        testPod("p", nil, withPreferred(prefer(10, selectorReq("zone", corev1.NodeSelectorOpIn, "c")))),
			raw:        []int64{0, 0, 0, 0},
			normalized: []int64{0, 0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := make([]int64, len(nodes))
			for i, ni := range nodes {
				raw[i] = NodeAffinity{}.Score(context.Background(), framework.NewCycleState(), tt.pod, ni)
			}
			if !slices.Equal(raw, tt.raw) {
				t.Errorf("scores = %v, want %v", raw, tt.raw)
			}
			if got := runScores(NodeAffinity{}, tt.pod, nodes...); !slices.Equal(got, tt.normalized) {
				t.Errorf("normalized scores = %v, want %v", got, tt.normalized)
			}
		})
	}
}
