package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/agent/downward"
	"github.com/skiff-lab/skiff/agent/envvars"
)

// containerEnv is container c's environment (package envvars: service
// links, envFrom, env with $(VAR) expansion and valueFrom), for a pod whose
// sandbox has podIPs. Keys envFrom had to skip are reported as a warning
// event, as the kubelet does. An error means the container cannot be
// configured yet (CreateContainerConfigError).
func (s *podSync) containerEnv(ctx context.Context, c *v1.Container, podIPs []string) ([]string, error) {
	res, err := envvars.For(ctx, s.a.objects, s.pod, c, envvars.Input{
		IPs: s.downwardIPs(podIPs), NodeAllocatable: s.a.node.Allocatable(),
	})
	if err != nil {
		return nil, err
	}
	for _, skipped := range res.Skipped {
		s.event(v1.EventTypeWarning, envvars.ReasonInvalidNames, skipped.Message())
	}
	return res.Env, nil
}

// downwardIPs are the pod's and the node's addresses as the Downward API
// reports them: from the sandbox, not from the pod's status, which may not
// have been written yet.
func (s *podSync) downwardIPs(podIPs []string) downward.IPs {
	ips := downward.IPs{Pod: []string{}, Host: []string{}}
	ips.Pod = append(ips.Pod, podIPs...)
	if s.a.nodeIP != "" {
		ips.Host = append(ips.Host, s.a.nodeIP)
	}
	return ips
}
