package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// NodeUnschedulable rejects cordoned nodes (spec.unschedulable) unless the
// pod tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = NodeUnschedulable{}

func (NodeUnschedulable) Name() string { return "NodeUnschedulable" }

func (NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Node.Spec.Unschedulable {
		return nil
	}
	taint := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if v1helper.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
		return nil
	}
	return framework.Unfit("node(s) were unschedulable")
}
