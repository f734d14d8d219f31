package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// NodeName keeps a pod that names its node (spec.nodeName set by its
// author; the scheduler only sees such pods through a nominated name) to
// that node.
type NodeName struct{}

var _ framework.FilterPlugin = NodeName{}

func (NodeName) Name() string { return "NodeName" }

func (NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == ni.Node.Name {
		return nil
	}
	return framework.Unfit("node(s) didn't match the requested node name")
}
