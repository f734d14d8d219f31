package plugins

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeUnschedulableFilter(t *testing.T) {
	const unschedulable = "node(s) were unschedulable"
	tests := []struct {
		name        string
		node        *corev1.Node
		tolerations []corev1.Toleration
		want        []string
	}{
		{name: "schedulable node fits", node: testNode("n")},
		{name: "cordoned node is rejected", node: testNode("n", withCordon), want: []string{unschedulable}},
		{
			name: "cordoned node fits a pod tolerating the unschedulable taint",
			node: testNode("n", withCordon),
			tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}},
		},
		{
			name:        "a toleration for every effect of the key is enough",
			node:        testNode("n", withCordon),
			tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}},
		},
		{
			name:        "an empty-key Exists toleration tolerates it",
			node:        testNode("n", withCordon),
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		{
			name: "tolerating another key is not enough",
			node: testNode("n", withCordon),
			tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}},
			want: []string{unschedulable},
		},
		{
			name: "tolerating only NoExecute is not enough",
			node: testNode("n", withCordon),
			tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute}},
			want: []string{unschedulable},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", nil, withTolerations(tt.tolerations...))
			if got := runFilter(NodeUnschedulable{}, pod, testNodeInfo(tt.node)); !slices.Equal(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
		})
	}
}
