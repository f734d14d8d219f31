package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/probes"
)

// containerExec runs a command in a running container and collects its
// output (implemented by *cri.Runtime).
type containerExec interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int, err error)
}

// execer adapts the runtime to the probes' Execer: output is stdout then
// stderr, as the kubelet reports exec probe output.
type execer struct{ rt containerExec }

func (e execer) Exec(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, int, error) {
	stdout, stderr, code, err := e.rt.ExecSync(ctx, containerID, cmd, timeout)
	return append(stdout, stderr...), code, err
}

// startProbes makes the prober (probes and hooks share it) and the probe
// manager, which syncs a pod when a probe's verdict changes and reports
// failed runs as Unhealthy events.
func (a *Agent) startProbes(rt containerExec) {
	a.prober = probes.NewProber(execer{rt})
	a.health = probes.NewManager(a.prober,
		func(uid types.UID, _ string, _ probes.Kind, _ probes.Result, _ string) { a.pods.queue.Add(uid) },
		probes.WithEvents(a.probeEvent))
}

func (a *Agent) probeEvent(e probes.Event) {
	if pod, _, ok := a.pods.lookup(e.PodUID); ok {
		a.recorder.Event(pod, v1.EventTypeWarning, e.Reason, e.Message)
	}
}

// updateProbes tells the probe manager which of the pod's containers run
// now (in the current sandbox), so probes start, stop or follow a restart.
func (s *podSync) updateProbes(st podState) {
	sb := st.readySandbox()
	if sb == nil || s.a.health == nil {
		return
	}
	ip := ""
	if len(sb.PodIPs) > 0 {
		ip = sb.PodIPs[0]
	}
	var states []probes.ContainerState
	for _, list := range [][]v1.Container{s.pod.Spec.InitContainers, s.pod.Spec.Containers} {
		for _, c := range list {
			if cur := st.current(c.Name, sb.ID); cur != nil {
				states = append(states, probes.ContainerState{Name: c.Name, ID: cur.ID,
					Running: cur.State == cri.StateRunning, StartedAt: cur.StartedAt})
			}
		}
	}
	s.a.health.Update(s.pod, ip, states)
}

// stopUnhealthy stops containers that failed their liveness or startup
// probe, with the probe's grace period if it sets one; restartPolicy then
// restarts them. The stops run in the background, so that a container slow
// to stop does not hold up the pod's status (other containers' readiness);
// the pod is synced again when one is done, and a container already being
// stopped is left alone.
func (s *podSync) stopUnhealthy(ctx context.Context, list []unhealthy) {
	for _, u := range list {
		if _, busy := s.a.stopping.LoadOrStore(u.Container.ID, true); busy {
			continue
		}
		s.event(v1.EventTypeNormal, "Killing",
			fmt.Sprintf("Container %s failed %s probe, will be restarted", u.Spec.Name, strings.ToLower(u.Probe.String())))
		grace := s.gracePeriod()
		if g, ok := probes.ProbeGracePeriod(u.Spec, u.Probe); ok {
			grace = g
		}
		go func() {
			defer s.a.pods.queue.Add(s.pod.UID)
			defer s.a.stopping.Delete(u.Container.ID)
			if err := s.stopContainer(ctx, u.Container, grace); err != nil && ctx.Err() == nil {
				s.log().Warn("stop unhealthy container", "container", u.Spec.Name, "err", err)
			}
		}()
	}
}
