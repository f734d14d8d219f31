package agent

import (
	"context"
	"log/slog"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/skiff-lab/skiff/cri"
)

// keepAttempts is how many attempts of each container are kept: the current
// one and the one before it (its lastState and `kubectl logs --previous`).
const keepAttempts = 2

// deadContainers lists the exited attempts beyond the newest keepAttempts of
// each container. It does no I/O.
func deadContainers(st podState) []cri.Container {
	var out []cri.Container
	for _, list := range st.containers {
		for i, c := range list {
			if i >= keepAttempts && c.State == cri.StateExited {
				out = append(out, c)
			}
		}
	}
	return out
}

// pruneContainers removes old exited attempts of the pod's containers.
func (s *podSync) pruneContainers(ctx context.Context, st podState) {
	for _, c := range deadContainers(st) {
		if err := s.a.rt.RemoveContainer(ctx, c.ID); err != nil {
			s.log().Warn("remove dead container", "container", c.Name, "err", err)
		}
	}
}

// podCgroupResources are the limits of the pod's parent cgroup, as the
// kubelet sets them: cpu shares from the summed requests; a cpu quota and a
// memory limit only when every container has one. Nil for BestEffort pods.
func podCgroupResources(pod *v1.Pod) *specs.LinuxResources {
	if pod.Status.QOSClass == v1.PodQOSBestEffort {
		return nil
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lim := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	shares := max(2, uint64(req.Cpu().MilliValue())*1024/1000)
	res := &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}
	if allLimit(pod, v1.ResourceCPU) {
		period := uint64(100000)
		quota := max(1000, lim.Cpu().MilliValue()*100000/1000)
		res.CPU.Period, res.CPU.Quota = &period, &quota
	}
	if allLimit(pod, v1.ResourceMemory) {
		mem := lim.Memory().Value()
		res.Memory = &specs.LinuxMemory{Limit: &mem}
	}
	return res
}

func allLimit(pod *v1.Pod, name v1.ResourceName) bool {
	for _, c := range pod.Spec.Containers {
		if _, ok := c.Resources.Limits[name]; !ok {
			return false
		}
	}
	return len(pod.Spec.Containers) > 0
}

// orphanGrace keeps the relist from tearing down a network namespace that
// a sync is just now giving a sandbox.
const orphanGrace = 2 * time.Minute

// cleanupNetworks tears down network namespaces that no sandbox uses.
func (a *Agent) cleanupNetworks(ctx context.Context, all []cri.Container) {
	ids, err := a.net.List()
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, c := range all {
		used[c.ID] = true
	}
	for _, id := range ids {
		info, err := os.Stat(a.netnsPath(id))
		if used[id] || err != nil || a.clock.Since(info.ModTime()) < orphanGrace {
			continue
		}
		if err := a.net.Teardown(ctx, id); err != nil {
			slog.Warn("tear down orphaned network namespace", "id", id, "err", err)
		}
	}
}
