package agent

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/agent/envvars"
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
	id, err := s.createAndStart(ctx, sb, act, ref)
	s.a.pods.starts.step(s.pod.UID, "agent.container", err, attribute.String("container", c.Name), attribute.Bool("init", act.Init))
	if err != nil {
		return err
	}
	startedContainers.WithLabelValues(containerType(s.pod, act)).Inc()
	return s.postStart(ctx, c, id)
}

// createAndStart creates the container in the sandbox sb from image, then
// starts it.
func (s *podSync) createAndStart(ctx context.Context, sb *cri.Container, act startAction, image string) (string, error) {
	c := act.Container
	spec, err := s.containerSpec(ctx, sb, act, image)
	if err != nil {
		return "", s.fail(c.Name, "CreateContainerConfigError", "Failed", err.Error())
	}
	id, err := s.a.rt.CreateContainer(ctx, spec)
	if err != nil {
		return "", s.fail(c.Name, createContainerReason(err), "Failed", err.Error())
	}
	s.event(v1.EventTypeNormal, "Created", "Created container: "+c.Name)
	if err := s.a.rt.StartContainer(ctx, id); err != nil {
		s.retryAfter(s.a.crashBackoff.Get(backoffKey(s.pod, c.Name)))
		return "", s.fail(c.Name, "RunContainerError", "Failed", err.Error())
	}
	s.a.waits.clear(s.pod.UID, c.Name)
	s.event(v1.EventTypeNormal, "Started", "Started container "+c.Name)
	return id, nil
}

// containerSpec turns a container of the pod into what the runtime runs:
// its environment, then command and args with $(VAR) expanded against it,
// then its mounts.
func (s *podSync) containerSpec(ctx context.Context, sb *cri.Container, act startAction, image string) (cri.ContainerSpec, error) {
	c := act.Container
	security, err := containerSecurity(s.pod, c)
	if err != nil {
		return cri.ContainerSpec{}, err
	}
	env, err := s.containerEnv(ctx, c, sb.PodIPs)
	if err != nil {
		return cri.ContainerSpec{}, err
	}
	mounts, err := s.mounts(c, act.Attempt, sb.PodIPs, env)
	if err != nil {
		return cri.ContainerSpec{}, err
	}
	return cri.ContainerSpec{
		Pod: s.ref, SandboxID: sb.ID, Name: c.Name, Attempt: act.Attempt, Image: image,
		Command: envvars.ExpandCommand(c.Command, env), Args: envvars.ExpandCommand(c.Args, env),
		Env: env, WorkingDir: c.WorkingDir, Mounts: mounts,
		Resources: containerResources(s.resources(c)), Hostname: podHostname(s.pod),
		Security: security, Stdio: cri.Stdio{Stdin: c.Stdin, StdinOnce: c.StdinOnce, TTY: c.TTY},
	}, nil
}

// containerResources converts requests and limits to cgroup settings the
// way the kubelet does: cpu request → shares, cpu limit → CFS quota over a
// 100ms period, memory limit → memory limit; the cpu and memory they come
// from are kept with the container (resize.go).
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
	out.Source = encodeResources(r)
	return out
}
