package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/probes"
)

// minStopGrace is what a container is given to stop after its PreStop hook
// used up the grace period, as the kubelet does.
const minStopGrace = 2 * time.Second

// runHook runs a lifecycle handler (exec, httpGet, tcpSocket or sleep) of
// container c, whose runtime ID is id, for at most timeout. Exec and network
// handlers run like probes (network ones against the pod's IP); any result
// but success is an error carrying the handler's output.
func (s *podSync) runHook(ctx context.Context, h *v1.LifecycleHandler, c *v1.Container, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if h.Sleep != nil {
		select {
		case <-ctx.Done():
		case <-s.a.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
		return nil
	}
	probe := &v1.Probe{TimeoutSeconds: int32(max(1, timeout/time.Second)),
		ProbeHandler: v1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}}
	res, out, err := s.a.prober.Probe(ctx, probe, probes.Target{PodIP: s.podIP, Container: c, ContainerID: id})
	switch {
	case err != nil:
		return err
	case res != probes.Success && res != probes.Warning:
		return errors.New(out)
	}
	return nil
}

// postStart runs the container's PostStart hook right after it started; the
// sync (and so the Running status) waits for it. A failed hook kills the
// container (FailedPostStartHook), and restartPolicy applies.
func (s *podSync) postStart(ctx context.Context, c *v1.Container, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	err := s.runHook(ctx, c.Lifecycle.PostStart, c, id, s.gracePeriod())
	s.a.pods.starts.step(s.pod.UID, "agent.poststart", err, attribute.String("container", c.Name))
	if err == nil {
		return nil
	}
	s.event(v1.EventTypeWarning, "FailedPostStartHook", fmt.Sprintf("PostStartHook failed: %v", err))
	if _, stopErr := s.a.rt.StopContainer(ctx, id, s.gracePeriod()); stopErr != nil {
		return errors.Join(err, stopErr)
	}
	s.setWaiting(c.Name, "PostStartHookError", err.Error())
	return fmt.Errorf("PostStartHookError: %w", err)
}

// stopContainer stops one container within grace: its PreStop hook first
// (if it has one and runs), then SIGTERM with what is left of grace (at
// least minStopGrace after a hook), then SIGKILL.
func (s *podSync) stopContainer(ctx context.Context, c cri.Container, grace time.Duration) error {
	spec := s.containerByName(c.Name)
	name := attribute.String("container", c.Name)
	if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && c.State == cri.StateRunning && grace > 0 {
		start := s.a.clock.Now()
		err := s.runHook(ctx, spec.Lifecycle.PreStop, spec, c.ID, grace)
		if err != nil {
			s.event(v1.EventTypeWarning, "FailedPreStopHook", fmt.Sprintf("PreStopHook failed: %v", err))
		}
		s.deletionStep("agent.prestop", start, err, name)
		grace = max(grace-s.a.clock.Since(start), minStopGrace)
	}
	start := time.Now()
	how, err := s.a.rt.StopContainer(ctx, c.ID, grace)
	attrs := []attribute.KeyValue{name, attribute.String("grace", grace.String())}
	if signal := stopSignals[how]; signal != "" {
		attrs = append(attrs, attribute.String("signal", signal))
	}
	s.deletionStep("agent.stop", start, err, attrs...)
	return err
}

// stopSignals name the signal that ended a container a stop found running.
var stopSignals = map[cri.Stop]string{cri.Terminated: "SIGTERM", cri.Killed: "SIGKILL"}

// containerByName finds a container (init or main) of the pod's spec.
func (s *podSync) containerByName(name string) *v1.Container {
	for _, list := range [][]v1.Container{s.pod.Spec.InitContainers, s.pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
