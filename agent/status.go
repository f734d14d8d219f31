package agent

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/cri"
)

// waiting is why a container is not running, as the executor last saw it
// (ErrImagePull, CrashLoopBackOff, …).
type waiting struct{ Reason, Message string }

// statusInput is everything the pod's status is computed from.
type statusInput struct {
	pod     *v1.Pod
	state   podState
	waits   map[string]waiting
	hostIP  string
	podIPs  []string
	now     time.Time
	started time.Time // when the agent first saw the pod
	health  containerHealth
	// messages are the termination messages of exited containers, by ID.
	messages map[string]string
	failure  *podFailure // the pod has failed as a whole (evicted, past its deadline)
	// alloc is what the containers were given, resize what holds a resize
	// (resize.go); generation is the pod's generation they answer to (the
	// pod's own when zero).
	alloc      allocation
	resize     resizeState
	generation int64
}

// containerHealth is what the probes say of running containers; ok is false
// for a container without that probe (implemented by *probes.Manager).
type containerHealth interface {
	Ready(uid types.UID, container string) (ready, ok bool)
	Started(uid types.UID, container string) (started, ok bool)
}

// computeStatus derives the pod's status from what runs on the node. It does
// no I/O; fields other agents own (PodScheduled, qosClass) are kept.
func computeStatus(in statusInput) v1.PodStatus {
	s := *in.pod.Status.DeepCopy()
	s.HostIP = in.hostIP
	s.HostIPs = nil
	if in.hostIP != "" {
		s.HostIPs = []v1.HostIP{{IP: in.hostIP}}
	}
	s.PodIP, s.PodIPs = "", nil
	for _, ip := range in.podIPs {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(in.podIPs) > 0 {
		s.PodIP = in.podIPs[0]
	}
	if s.StartTime == nil {
		s.StartTime = &metav1.Time{Time: in.started}
	}
	initialized := initDone(in.pod, in.state)
	s.InitContainerStatuses = containerStatuses(in, in.pod.Spec.InitContainers, true)
	s.ContainerStatuses = containerStatuses(in, in.pod.Spec.Containers, false)
	s.EphemeralContainerStatuses = nil
	for _, c := range ephemeralContainers(in.pod) {
		cs := containerStatus(in, *c, false)
		cs.Ready = false // never part of the pod's readiness
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, cs)
	}
	s.Phase = podPhase(in.pod, in.state, initialized)
	if f := in.failure; f != nil {
		s.Phase, s.Reason, s.Message = v1.PodFailed, f.reason, f.message
		if f.evicted {
			setConditionMessage(&s, v1.DisruptionTarget, true, terminationByKubelet, f.message, in.now)
		}
	}
	setConditions(&s, in, initialized)
	setResizeConditions(&s, in)
	// The spec this status answers to, as the kubelet reports it.
	s.ObservedGeneration = in.pod.Generation
	if in.generation != 0 {
		s.ObservedGeneration = in.generation
	}
	for i := range s.Conditions {
		if ownCondition(s.Conditions[i].Type) {
			s.Conditions[i].ObservedGeneration = s.ObservedGeneration
		}
	}
	return s
}

// ownCondition says whether the agent sets condition t (PodScheduled is
// the scheduler's, others may be a controller's).
func ownCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

// initDone says every init container has succeeded (in any sandbox: a pod
// whose inits finished does not show Init:… again while a sandbox is redone).
// A sidecar counts once it has run.
func initDone(pod *v1.Pod, st podState) bool {
	for _, c := range pod.Spec.InitContainers {
		l := st.latest(c.Name)
		switch {
		case l == nil:
			return false
		case isSidecar(&c):
			if l.State != cri.StateRunning && l.State != cri.StateExited {
				return false
			}
		case l.State != cri.StateExited || l.ExitCode != 0:
			return false
		}
	}
	return true
}

func podPhase(pod *v1.Pod, st podState, initialized bool) v1.PodPhase {
	if podFinished(pod, st) {
		if failedPod(pod, st) {
			return v1.PodFailed
		}
		return v1.PodSucceeded
	}
	if !initialized {
		return v1.PodPending
	}
	running := false
	for _, c := range pod.Spec.Containers {
		l := st.latest(c.Name)
		if l == nil {
			return v1.PodPending
		}
		running = running || l.State == cri.StateRunning || shouldRestart(pod, *l)
	}
	if running {
		return v1.PodRunning
	}
	return v1.PodPending
}

func failedPod(pod *v1.Pod, st podState) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if l := st.latest(c.Name); !isSidecar(&c) && l != nil && l.State == cri.StateExited && l.ExitCode != 0 {
				return true
			}
		}
	}
	return false
}

func containerStatuses(in statusInput, specs []v1.Container, init bool) []v1.ContainerStatus {
	out := make([]v1.ContainerStatus, 0, len(specs))
	for _, c := range specs {
		out = append(out, containerStatus(in, c, init))
	}
	return out
}

func containerStatus(in statusInput, c v1.Container, init bool) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	if ref, err := cri.NormalizeImage(c.Image); err == nil {
		cs.Image = ref
	}
	list := in.state.containers[c.Name]
	if len(list) == 0 {
		cs.State.Waiting = initialWaiting(in, c.Name)
		return cs
	}
	cur := list[0]
	if r, ok := in.alloc[c.Name]; ok {
		// As the kubelet: what the container was given, and what it runs with.
		cs.AllocatedResources = r.Requests
		cs.Resources = statusResources(r, cur)
	}
	cs.ContainerID = "containerd://" + cur.ID
	cs.ImageID = cur.ImageID
	cs.RestartCount = int32(cur.Attempt)
	cs.State = runtimeState(cur, in.messages)
	if len(list) > 1 {
		cs.LastTerminationState = runtimeState(list[1], in.messages)
	}
	if w, ok := in.waits[c.Name]; ok && cur.State != cri.StateRunning {
		if cur.State == cri.StateExited {
			cs.LastTerminationState = cs.State
		}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	}
	running := cur.State == cri.StateRunning
	started, ready := probedHealth(in, c.Name, running)
	cs.Started = &started
	cs.Ready = ready && (!init || isSidecar(&c))
	if init && !isSidecar(&c) {
		// An init container that finished well is ready, as the kubelet
		// reports it.
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	}
	return cs
}

// probedHealth is a running container's started and ready as the kubelet
// reports them: started once its startup probe succeeded (at once without
// one), ready once started and its readiness probe succeeded (at once
// without one).
func probedHealth(in statusInput, name string, running bool) (started, ready bool) {
	if !running {
		return false, false
	}
	started, ready = true, true
	if in.health == nil {
		return started, ready
	}
	if s, ok := in.health.Started(in.pod.UID, name); ok {
		started = s
	}
	if r, ok := in.health.Ready(in.pod.UID, name); ok {
		ready = r
	}
	return started, started && ready
}

// initialWaiting is the state of a container that has never been created.
// initialWaiting is the state of a container never created: as the
// kubelet reports it, PodInitializing in a pod with init containers (the
// init containers themselves too), else ContainerCreating.
func initialWaiting(in statusInput, name string) *v1.ContainerStateWaiting {
	if len(in.pod.Spec.InitContainers) > 0 {
		return waitingState(in, name, "PodInitializing")
	}
	return waitingState(in, name, "ContainerCreating")
}

func waitingState(in statusInput, name, fallback string) *v1.ContainerStateWaiting {
	if w, ok := in.waits[name]; ok {
		return &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
	}
	return &v1.ContainerStateWaiting{Reason: fallback}
}

func runtimeState(c cri.Container, messages map[string]string) v1.ContainerState {
	switch c.State {
	case cri.StateRunning:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Time{Time: c.StartedAt}}}
	case cri.StateExited:
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: int32(c.ExitCode), Reason: c.Reason, Message: messages[c.ID], ContainerID: "containerd://" + c.ID,
			StartedAt: metav1.Time{Time: c.StartedAt}, FinishedAt: metav1.Time{Time: c.FinishedAt},
		}}
	}
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
}

// setConditions sets the conditions the agent owns; PodScheduled and any
// others are kept as they are.
func setConditions(s *v1.PodStatus, in statusInput, initialized bool) {
	ready := s.Phase == v1.PodRunning
	for _, cs := range s.ContainerStatuses {
		ready = ready && cs.Ready
	}
	for i, cs := range s.InitContainerStatuses {
		if i < len(in.pod.Spec.InitContainers) && isSidecar(&in.pod.Spec.InitContainers[i]) {
			ready = ready && cs.Ready
		}
	}
	sandbox := in.state.readySandbox() != nil && len(in.podIPs) > 0
	set := func(t v1.PodConditionType, ok bool, reason string) {
		setCondition(s, t, ok, reason, in.now)
	}
	set(v1.PodReadyToStartContainers, sandbox, "")
	if len(in.pod.Spec.InitContainers) == 0 || initialized {
		set(v1.PodInitialized, true, "")
	} else {
		setConditionMessage(s, v1.PodInitialized, false, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: %v", incompleteInits(s, in.pod)), in.now)
	}
	reason, message := "", ""
	switch {
	case s.Phase == v1.PodSucceeded || s.Phase == v1.PodFailed:
		reason = "PodCompleted"
	case !ready:
		reason = "ContainersNotReady"
		message = fmt.Sprintf("containers with unready status: %v", unreadyContainers(s))
	}
	for _, t := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
		setConditionMessage(s, t, ready, reason, message, in.now)
	}
}

// incompleteInits are the init containers not done yet, as the kubelet
// names them in the Initialized condition: regular ones that have not
// exited 0, sidecars that have not started.
func incompleteInits(s *v1.PodStatus, pod *v1.Pod) []string {
	var names []string
	for i, cs := range s.InitContainerStatuses {
		done := cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		if i < len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[i]) {
			done = cs.Started != nil && *cs.Started
		}
		if !done {
			names = append(names, cs.Name)
		}
	}
	return names
}

// unreadyContainers are the containers the Ready condition waits for.
func unreadyContainers(s *v1.PodStatus) []string {
	var names []string
	for _, cs := range s.ContainerStatuses {
		if !cs.Ready {
			names = append(names, cs.Name)
		}
	}
	return names
}

// setCondition updates or adds a condition, moving lastTransitionTime only
// when the status changes.
func setCondition(s *v1.PodStatus, t v1.PodConditionType, ok bool, reason string, now time.Time) {
	setConditionMessage(s, t, ok, reason, "", now)
}

func setConditionMessage(s *v1.PodStatus, t v1.PodConditionType, ok bool, reason, message string, now time.Time) {
	status := v1.ConditionFalse
	if ok {
		status = v1.ConditionTrue
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.Time{Time: now}
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	s.Conditions = append(s.Conditions, v1.PodCondition{Type: t, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.Time{Time: now}})
}
