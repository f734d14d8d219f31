package plugins

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeNameFilter(t *testing.T) {
	tests := []struct {
		name     string
		nodeName string // the pod's spec.nodeName
		want     []string
	}{
		{name: "a pod naming no node fits any", nodeName: ""},
		{name: "a pod naming this node fits", nodeName: "node-a"},
		{name: "a pod naming another node is rejected", nodeName: "node-b", want: []string{"node(s) didn't match the requested node name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", nil, func(p *corev1.Pod) { p.Spec.NodeName = tt.nodeName })
			if got := runFilter(NodeName{}, pod, testNodeInfo(testNode("node-a"))); !slices.Equal(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
		})
	}
}
