package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
)

// podSync is one sync of one pod: it observes, plans, carries the plan out
// and reports. Only the pod's worker uses it, so it needs no locking.
type podSync struct {
	a       *Agent
	pod     *v1.Pod
	ref     cri.PodRef
	podIP   string        // of the running sandbox, as last observed
	failure *podFailure   // set when the pod has failed as a whole
	retry   time.Duration // if set, sync the pod again after this long
	// alloc is what the pod's containers are given (resize.go), decided
	// for generation; resizeState says why a resize waits or failed.
	alloc       allocation
	generation  int64
	resizeState resizeState
}

// deferredResizeRetry is how soon a resize that waits for room is tried
// again (a pod leaving the node makes room).
const deferredResizeRetry = 10 * time.Second

// maxRounds bounds the observe → plan → act rounds of one sync. A pod
// needs two to start (its sandbox, then its containers in it) and one
// more for each init container that finishes at once; whatever is left is
// done by the next sync, which the container's exit triggers.
const maxRounds = 4

// syncPod brings the node in line with the pod and writes its status. It
// returns when the pod should be synced again (0: on the next change).
//
// It observes the runtime, then plans and acts round after round, each on
// a fresh observation, until the plan leaves the runtime as it is or a
// step fails; then it reports the pod's status from the last observation.
func (a *Agent) syncPod(ctx context.Context, pod *v1.Pod) (time.Duration, error) {
	if a.pods.starts.mark(pod.UID, stepSynced) {
		a.pods.starts.step(pod.UID, "agent.queue", nil)
	}
	s := &podSync{a: a, pod: pod, ref: cri.PodRef{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name}}
	s.failure = s.podFailure()
	st, err := s.observe(ctx)
	if err != nil {
		return 0, err
	}
	if rej := admit(pod, a.pods.all()); rej != nil && pod.DeletionTimestamp == nil && st.empty() {
		return 0, s.reject(ctx, *rej)
	}
	s.alloc, s.resizeState = a.allocate(pod, st)
	s.generation = pod.Generation
	if s.resizeState.pendingReason == v1.PodReasonDeferred {
		s.retryAfter(deferredResizeRetry)
	}
	if err := s.prepare(ctx, st); err != nil {
		return 0, err
	}
	st, stepErr, err := s.converge(ctx, st)
	if err != nil {
		return 0, err
	}
	if pod.DeletionTimestamp != nil && stepErr == nil {
		if err := s.reportTerminal(ctx); err != nil {
			return 0, err
		}
		return 0, s.finishDeletion(ctx)
	}
	s.updateProbes(st)
	s.pruneContainers(ctx, st)
	if err := s.reportStatus(ctx, st); err != nil {
		return 0, err
	}
	if errors.Is(stepErr, errBackingOff) {
		stepErr = nil
	}
	return s.retry, stepErr
}

// prepare readies a pod for its plan. Like the kubelet, it reports what is
// there before acting, so a new pod shows ContainerCreating while its
// sandbox and containers are made; then it sets up the volumes of a live
// pod, as the kubelet mounts them before the sandbox (a volume that
// cannot be set up holds the pod in ContainerCreating).
func (s *podSync) prepare(ctx context.Context, st podState) error {
	if err := s.reportStatus(ctx, st); err != nil {
		return err
	}
	if s.pod.DeletionTimestamp != nil || s.failure != nil || podFinished(s.pod, st) {
		return nil
	}
	err := s.prepareVolumes(ctx)
	if err != nil || s.a.pods.starts.firstTime(s.pod.UID, "volumes") {
		s.a.pods.starts.step(s.pod.UID, "agent.volumes", err, attribute.Int("volumes", len(s.pod.Spec.Volumes)))
	}
	return err
}

// converge plans and acts on st, observing again after each round, until
// a plan leaves the runtime as it is, a step fails (stepErr), or maxRounds
// have run. It returns the last observation; err is a failed observation.
func (s *podSync) converge(ctx context.Context, st podState) (last podState, stepErr, err error) {
	for range maxRounds {
		plan := s.plan(st)
		stepErr = s.carryOut(ctx, plan, st)
		if !plan.changesRuntime() {
			return st, stepErr, nil
		}
		if st, err = s.observe(ctx); err != nil || stepErr != nil {
			return st, stepErr, err
		}
	}
	return st, nil, nil
}

// plan is the pod's next steps: computePodActions, or, once the pod has
// failed as a whole (evicted, past its deadline), stopping everything.
func (s *podSync) plan(st podState) podActions {
	if s.failure == nil {
		plan := computePodActions(s.pod, st, s.a.crashBackoff, s.a.health)
		plan.Resize = planResize(s.pod, s.alloc, st)
		return plan
	}
	return podActions{KillPod: len(st.sandboxes) > 0 || len(st.live()) > 0}
}

// observe lists what the runtime has of the pod.
func (s *podSync) observe(ctx context.Context) (podState, error) {
	all, err := s.a.rt.List(ctx, s.ref.UID)
	if err != nil {
		return podState{}, err
	}
	st := groupState(all)
	if ips := podIPs(st); len(ips) > 0 {
		s.podIP = ips[0]
	}
	s.a.pods.starts.observed(s.pod, st)
	return st, nil
}

// carryOut does what plan says, recording the steps of a pod's first start.
func (s *podSync) carryOut(ctx context.Context, plan podActions, st podState) error {
	switch {
	case plan.KillPod:
		if s.failure != nil {
			s.event(s.failure.eventType, s.failure.reason, s.failure.message)
		}
		return s.killPod(ctx, st, s.pod.DeletionTimestamp != nil)
	case plan.CreateSandbox:
		if err := s.stopAll(ctx, plan.Kill, 0); err != nil {
			return err
		}
		err := s.createSandbox(ctx, st)
		s.a.pods.starts.step(s.pod.UID, "agent.sandbox", err, attribute.String("ip", s.podIP))
		if err == nil {
			s.a.pods.starts.mark(s.pod.UID, stepSandbox)
		}
		return err
	}
	if len(plan.Resize) > 0 {
		if err := s.resize(ctx, st, plan.Resize); err != nil {
			return err
		}
	}
	s.stopUnhealthy(ctx, plan.Unhealthy)
	for _, name := range plan.BackingOff {
		s.backingOff(name, st)
	}
	var errs []error
	for _, act := range plan.Start {
		errs = append(errs, s.startContainer(ctx, st, act))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(plan.Start) > 0 {
		s.a.pods.starts.mark(s.pod.UID, stepContainers)
	}
	return nil
}

// backingOff reports a container waiting out its crash back-off.
func (s *podSync) backingOff(name string, st podState) {
	key := backoffKey(s.pod, name)
	delay := s.a.crashBackoff.Get(key)
	msg := fmt.Sprintf("back-off %v restarting failed container=%s pod=%s_%s(%s)", delay, name, s.pod.Name, s.pod.Namespace, s.pod.UID)
	s.setWaiting(name, "CrashLoopBackOff", msg)
	s.event(v1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", name, s.pod.Name, s.pod.Namespace, s.pod.UID))
	if l := st.latest(name); l != nil {
		s.retryAfter(l.FinishedAt.Add(delay).Sub(s.a.clock.Now()))
	}
}

// fail records why a container cannot start: its waiting reason, and a
// Warning event "Error: <reason>" as the kubelet sends.
func (s *podSync) fail(container, reason, eventReason, message string) error {
	s.setWaiting(container, reason, message)
	s.event(v1.EventTypeWarning, eventReason, "Error: "+reason)
	return fmt.Errorf("%s: %s", reason, message)
}

func (s *podSync) setWaiting(container, reason, message string) {
	s.a.waits.set(s.pod.UID, container, waiting{Reason: reason, Message: message})
}

func (s *podSync) retryAfter(d time.Duration) {
	if d < 100*time.Millisecond {
		d = 100 * time.Millisecond
	}
	if s.retry == 0 || d < s.retry {
		s.retry = d
	}
}

func (s *podSync) event(kind, reason, message string) {
	s.a.recorder.Event(s.pod, kind, reason, message)
}

func (s *podSync) log() *slog.Logger {
	return slog.With("pod", s.pod.Name, "namespace", s.pod.Namespace)
}
