package agent

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
)

// startContainer pulls the image if needed, creates the container in the
// current sandbox and starts it, reporting each step as the kubelet does
// (Pulling/Pulled, Created, Started, or Failed with the reason).
func (s *podSync) startContainer(ctx context.Context, st podState, act startAction) error {
	c := act.Container
	sb := st.readySandbox()
	if sb == nil {
		return fmt.Errorf("start %s: no running sandbox", c.Name)
	}
	if prev := st.latest(c.Name); prev != nil && prev.State == cri.StateExited {
		s.a.crashBackoff.Next(backoffKey(s.pod, c.Name), prev.FinishedAt)
	}
	ref, err := s.ensureImage(ctx, c)
	if err != nil {
		return err
	}
	spec, err := s.containerSpec(sb, act, ref)
	if err != nil {
		return s.fail(c.Name, "CreateContainerConfigError", "Failed", err.Error())
	}
	id, err := s.a.rt.CreateContainer(ctx, spec)
	if err != nil {
		return s.fail(c.Name, "CreateContainerError", "Failed", err.Error())
	}
	s.event(v1.EventTypeNormal, "Created", "Created container: "+c.Name)
	if err := s.a.rt.StartContainer(ctx, id); err != nil {
		s.retryAfter(s.a.crashBackoff.Get(backoffKey(s.pod, c.Name)))
		return s.fail(c.Name, "RunContainerError", "Failed", err.Error())
	}
	s.a.waits.clear(s.pod.UID, c.Name)
	s.event(v1.EventTypeNormal, "Started", "Started container "+c.Name)
	return nil
}

// containerSpec turns a container of the pod into what the runtime runs.
func (s *podSync) containerSpec(sb *cri.Container, act startAction, image string) (cri.ContainerSpec, error) {
	c := act.Container
	mounts, err := s.mounts(c, sb.PodIPs)
	if err != nil {
		return cri.ContainerSpec{}, err
	}
	env := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return cri.ContainerSpec{
		Pod: s.ref, SandboxID: sb.ID, Name: c.Name, Attempt: act.Attempt, Image: image,
		Command: c.Command, Args: c.Args, Env: env, WorkingDir: c.WorkingDir,
		Mounts: mounts, Resources: containerResources(c.Resources), Hostname: podHostname(s.pod),
	}, nil
}

// mounts are the pod's /etc/hosts and /etc/resolv.conf plus the container's
// volume mounts (emptyDir volumes; other volume types come later).
func (s *podSync) mounts(c *v1.Container, podIPs []string) ([]cri.Mount, error) {
	uid := string(s.pod.UID)
	hosts, err := s.a.rt.WritePodFile(uid, "etc-hosts", hostsFile(s.pod, podIPs))
	if err != nil {
		return nil, err
	}
	resolv, err := s.a.rt.WritePodFile(uid, "resolv.conf", resolvConf(s.pod, s.a.cfg.ResolvConf))
	if err != nil {
		return nil, err
	}
	mounts := []cri.Mount{{Source: hosts, Destination: "/etc/hosts"}, {Source: resolv, Destination: "/etc/resolv.conf"}}
	volumes := map[string]*v1.Volume{}
	for i := range s.pod.Spec.Volumes {
		volumes[s.pod.Spec.Volumes[i].Name] = &s.pod.Spec.Volumes[i]
	}
	for _, vm := range c.VolumeMounts {
		vol := volumes[vm.Name]
		if vol == nil || vol.EmptyDir == nil {
			return nil, fmt.Errorf("volume %q: only emptyDir volumes are supported", vm.Name)
		}
		dir, err := s.a.rt.EmptyDir(uid, vm.Name)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, cri.Mount{Source: dir, Destination: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	return mounts, nil
}

// containerResources converts requests and limits to cgroup settings the
// way the kubelet does: cpu request → shares, cpu limit → CFS quota over a
// 100ms period, memory limit → memory limit.
func containerResources(r v1.ResourceRequirements) cri.Resources {
	var out cri.Resources
	cpuReq := r.Requests.Cpu().MilliValue()
	if cpuReq == 0 {
		cpuReq = r.Limits.Cpu().MilliValue()
	}
	out.CPUShares = max(2, uint64(cpuReq)*1024/1000)
	if lim := r.Limits.Cpu().MilliValue(); lim > 0 {
		out.CPUPeriod = 100000
		out.CPUQuota = max(1000, lim*100000/1000)
	}
	out.MemoryLimit = r.Limits.Memory().Value()
	return out
}
