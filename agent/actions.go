package agent

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/probes"
)

// podActions is the plan for one sync of a pod. computePodActions makes it
// from what the API wants and what the node has; syncPod carries it out.
type podActions struct {
	// KillPod stops every container and the sandbox and tears the network
	// down: the pod is being deleted or has finished.
	KillPod bool
	// CreateSandbox replaces a missing or dead sandbox; Kill lists what
	// still runs from the old one.
	CreateSandbox bool
	Kill          []cri.Container
	// Start lists containers to create and start, in order. At most one
	// init container is started at a time.
	Start []startAction
	// BackingOff lists containers whose restart waits out a crash back-off.
	BackingOff []string
	// Unhealthy lists running containers that failed their liveness or
	// startup probe: they are stopped, and restarted by restartPolicy.
	Unhealthy []unhealthy
	// Resize lists running containers to give their allocation (resize.go).
	Resize []resizeAction
}

// changesRuntime says whether carrying the plan out starts, stops or
// creates anything (backing off only reports).
func (p podActions) changesRuntime() bool {
	return p.KillPod || p.CreateSandbox || len(p.Kill) > 0 || len(p.Start) > 0 || len(p.Unhealthy) > 0 || len(p.Resize) > 0
}

type unhealthy struct {
	Container cri.Container
	Spec      *v1.Container
	Probe     probes.Kind
}

// probeResults are the probes' verdicts on running containers
// (implemented by *probes.Manager).
type probeResults interface {
	Result(uid types.UID, container string, kind probes.Kind) (probes.Result, bool)
}

type startAction struct {
	Container *v1.Container
	Init      bool
	Attempt   int
}

// backoffs answers whether a container's restart must still wait.
type backoffs interface {
	IsInBackOffSince(key string, eventTime time.Time) bool
}

// computePodActions decides the next steps for a pod. It does no I/O.
// A nil probeResults means no probe has failed.
func computePodActions(pod *v1.Pod, st podState, bo backoffs, health probeResults) podActions {
	if pod.DeletionTimestamp != nil {
		return podActions{KillPod: !st.empty()}
	}
	if podFinished(pod, st) {
		return podActions{KillPod: len(st.sandboxes) > 0 || len(st.live()) > 0}
	}
	sb := st.readySandbox()
	if sb == nil {
		return podActions{CreateSandbox: true, Kill: st.live()}
	}
	var plan podActions
	initialized := planInitContainers(pod, st, sb.ID, bo, health, &plan)
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isSidecar(c) {
			if u, ok := failedProbe(pod, c, st.current(c.Name, sb.ID), health); ok {
				plan.Unhealthy = append(plan.Unhealthy, u)
			}
		}
	}
	if !initialized {
		return plan
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		planContainer(pod, c, st, sb.ID, bo, &plan)
		if u, ok := failedProbe(pod, c, st.current(c.Name, sb.ID), health); ok {
			plan.Unhealthy = append(plan.Unhealthy, u)
		}
	}
	for _, c := range ephemeralContainers(pod) {
		if st.latest(c.Name) == nil { // started once, never restarted
			plan.Start = append(plan.Start, startAction{Container: c})
		}
	}
	return plan
}

// ephemeralContainers are the pod's ephemeral containers as the containers
// they run as (the two types have the same fields).
func ephemeralContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// planInitContainers plans the next init container and reports whether all
// of them are done in the current sandbox: the regular ones succeeded, the
// sidecars (restartPolicy Always) started.
func planInitContainers(pod *v1.Pod, st podState, sandboxID string, bo backoffs, health probeResults, plan *podActions) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isSidecar(c) {
			if !planSidecar(pod, c, st, sandboxID, bo, health, plan) {
				return false
			}
			continue
		}
		cur := st.current(c.Name, sandboxID)
		switch {
		case cur == nil || cur.State == cri.StateUnknown:
			plan.Start = append(plan.Start, startAction{Container: c, Init: true, Attempt: st.nextAttempt(c.Name)})
			return false
		case cur.State != cri.StateExited:
			return false // still running
		case cur.ExitCode == 0:
			continue
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return false // the pod has failed; podFinished takes over
		case bo.IsInBackOffSince(backoffKey(pod, c.Name), cur.FinishedAt):
			plan.BackingOff = append(plan.BackingOff, c.Name)
			return false
		default:
			plan.Start = append(plan.Start, startAction{Container: c, Init: true, Attempt: cur.Attempt + 1})
			return false
		}
	}
	return true
}

// isSidecar says an init container is a sidecar: restartPolicy Always, it
// keeps running beside the main containers and is restarted whenever it
// exits.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// planSidecar starts or restarts a sidecar and reports whether the init
// containers after it may go on: once it has started (its startup probe, if
// any, succeeded), and, when it exits later, while it is restarted, if the
// main containers have run already.
func planSidecar(pod *v1.Pod, c *v1.Container, st podState, sandboxID string, bo backoffs, health probeResults, plan *podActions) bool {
	cur := st.current(c.Name, sandboxID)
	switch {
	case cur == nil || cur.State == cri.StateUnknown:
		plan.Start = append(plan.Start, startAction{Container: c, Init: true, Attempt: st.nextAttempt(c.Name)})
		return false
	case cur.State == cri.StateCreated:
		return false
	case cur.State == cri.StateRunning:
		return sidecarStarted(pod, c, health)
	case bo.IsInBackOffSince(backoffKey(pod, c.Name), cur.FinishedAt):
		plan.BackingOff = append(plan.BackingOff, c.Name)
	default:
		plan.Start = append(plan.Start, startAction{Container: c, Init: true, Attempt: cur.Attempt + 1})
	}
	return mainsStarted(pod, st)
}

func sidecarStarted(pod *v1.Pod, c *v1.Container, health probeResults) bool {
	if c.StartupProbe == nil || health == nil {
		return true
	}
	r, ok := health.Result(pod.UID, c.Name, probes.Startup)
	return ok && r == probes.Success
}

// mainsStarted says some main container of the pod has been created.
func mainsStarted(pod *v1.Pod, st podState) bool {
	for _, c := range pod.Spec.Containers {
		if st.latest(c.Name) != nil {
			return true
		}
	}
	return false
}

func planContainer(pod *v1.Pod, c *v1.Container, st podState, sandboxID string, bo backoffs, plan *podActions) {
	cur := st.current(c.Name, sandboxID)
	switch {
	case cur == nil || cur.State == cri.StateUnknown:
		if cur == nil && st.latest(c.Name) != nil && !shouldRestart(pod, *st.latest(c.Name)) {
			return // finished in an earlier sandbox and stays finished
		}
		plan.Start = append(plan.Start, startAction{Container: c, Attempt: st.nextAttempt(c.Name)})
	case cur.State != cri.StateExited || !shouldRestart(pod, *cur):
	case bo.IsInBackOffSince(backoffKey(pod, c.Name), cur.FinishedAt):
		plan.BackingOff = append(plan.BackingOff, c.Name)
	default:
		plan.Start = append(plan.Start, startAction{Container: c, Attempt: cur.Attempt + 1})
	}
}

// failedProbe reports a running container whose liveness or startup probe
// has failed.
func failedProbe(pod *v1.Pod, c *v1.Container, cur *cri.Container, health probeResults) (unhealthy, bool) {
	if health == nil || cur == nil || cur.State != cri.StateRunning {
		return unhealthy{}, false
	}
	for _, kind := range []probes.Kind{probes.Startup, probes.Liveness} {
		if r, ok := health.Result(pod.UID, c.Name, kind); ok && r == probes.Failure {
			return unhealthy{Container: *cur, Spec: c, Probe: kind}, true
		}
	}
	return unhealthy{}, false
}

// shouldRestart applies the pod's restartPolicy to an exited container.
func shouldRestart(pod *v1.Pod, c cri.Container) bool {
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return c.ExitCode != 0
	}
	return true
}

// podFinished says the pod will run nothing more: an init container failed
// under restartPolicy Never, or every container exited and none restarts.
func podFinished(pod *v1.Pod, st podState) bool {
	if pod.Spec.RestartPolicy == v1.RestartPolicyAlways {
		return false
	}
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		for _, c := range pod.Spec.InitContainers {
			if l := st.latest(c.Name); !isSidecar(&c) && l != nil && l.State == cri.StateExited && l.ExitCode != 0 {
				return true
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		l := st.latest(c.Name)
		if l == nil || l.State != cri.StateExited || shouldRestart(pod, *l) {
			return false
		}
	}
	return true
}

func backoffKey(pod *v1.Pod, container string) string {
	return string(pod.UID) + "/" + container
}
