package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// NodePorts rejects nodes where a host port the pod wants is taken. A port
// on 0.0.0.0 conflicts with the same port on any IP.
type NodePorts struct{}

var _ framework.FilterPlugin = NodePorts{}

func (NodePorts) Name() string { return "NodePorts" }

func (NodePorts) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	for _, want := range framework.HostPorts(pod) {
		for used := range ni.UsedPorts {
			if used.Port == want.Port && used.Protocol == want.Protocol &&
				(used.IP == want.IP || used.IP == "0.0.0.0" || want.IP == "0.0.0.0") {
				return framework.Unfit("node(s) didn't have free ports for the requested pod ports")
			}
		}
	}
	return nil
}
