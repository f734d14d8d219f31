package agent

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/podtrace"
)

// startTraces follow each pod's first start on this node, from the watch
// event that brings it here until its Ready condition is written:
//   - as steps of the pod's journey (podtrace), in the trace its
//     annotation carries, each step beginning where the one before ended
//     so that the journey accounts for all of the time;
//   - as the kubelet's pod startup latency tracker does: one DEBUG line
//     per pod (`--log-level debug`) once it runs, saying where its start
//     spent its time, and kubelet_pod_start_duration_seconds.
//
// Safe for concurrent use; it measures in real time and decides nothing.
type startTraces struct {
	mu     sync.Mutex
	traces map[types.UID]*startTrace
	tracer podtrace.Tracer
}

// startTrace holds when each step of one pod's start ended. The sandbox
// step includes the network (CNI ADD) and the pause container, which run
// at the same time.
type startTrace struct {
	pod                                               *v1.Pod // as first seen: its names and its trace
	seen, synced, network, pause, sandbox, containers time.Time
	last                                              time.Time       // where the journey's next step begins
	done                                              map[string]bool // the steps recorded once (firstTime)
	running                                           bool            // a status past Pending was written
}

// The steps a start trace marks.
type startStep int

const (
	stepSynced     startStep = iota // the pod's first sync began
	stepNetwork                     // CNI ADD gave it its IP
	stepPause                       // its pause container runs
	stepSandbox                     // its sandbox runs in its network
	stepContainers                  // its containers were started
)

func newStartTraces() *startTraces {
	return &startTraces{traces: map[types.UID]*startTrace{}}
}

// seen starts pod's trace, unless it has one or has started already.
func (s *startTraces) seen(pod *v1.Pod) {
	if pod.Status.Phase != v1.PodPending || pod.DeletionTimestamp != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.traces[pod.UID] == nil {
		now := time.Now()
		s.traces[pod.UID] = &startTrace{pod: pod, seen: now, last: now, done: map[string]bool{}}
	}
}

// mark records the end of step, the first time only (then it is true).
func (s *startTraces) mark(uid types.UID, step startStep) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.traces[uid]
	if t == nil {
		return false
	}
	at := []*time.Time{stepSynced: &t.synced, stepNetwork: &t.network, stepPause: &t.pause,
		stepSandbox: &t.sandbox, stepContainers: &t.containers}[step]
	if !at.IsZero() {
		return false
	}
	*at = time.Now()
	return true
}

// step records a step of the pod's journey that ends now and began where
// the last one ended; err, if set, is how it failed.
func (s *startTraces) step(uid types.UID, name string, err error, attrs ...attribute.KeyValue) {
	s.stepUntil(uid, name, time.Now(), err, attrs...)
}

func (s *startTraces) stepUntil(uid types.UID, name string, end time.Time, err error, attrs ...attribute.KeyValue) {
	s.mu.Lock()
	t := s.traces[uid]
	if t == nil {
		s.mu.Unlock()
		return
	}
	start := t.last
	if end.Before(start) {
		end = start // an init container that exited before its start was recorded
	}
	t.last = end
	s.mu.Unlock()
	s.tracer.Step(t.pod, name, start, end, err, attrs...)
}

// span records a step with its own times, alongside the others (the
// network, which is attached while the sandbox starts).
func (s *startTraces) span(uid types.UID, name string, start, end time.Time, err error, attrs ...attribute.KeyValue) {
	s.mu.Lock()
	t := s.traces[uid]
	s.mu.Unlock()
	if t != nil {
		s.tracer.Step(t.pod, name, start, end, err, attrs...)
	}
}

// observed records the exits of the pod's init containers, once each, at
// the time they exited.
func (s *startTraces) observed(pod *v1.Pod, st podState) {
	for _, c := range pod.Spec.InitContainers {
		l := st.latest(c.Name)
		if l == nil || l.State != cri.StateExited || !s.firstTime(pod.UID, "exit/"+c.Name) {
			continue
		}
		var err error
		if l.ExitCode != 0 {
			err = fmt.Errorf("exited with code %d", l.ExitCode)
		}
		s.stepUntil(pod.UID, "agent.init.run", l.FinishedAt, err,
			attribute.String("container", c.Name), attribute.Int("exitCode", l.ExitCode))
	}
}

// firstTime says whether the pod is being traced and key is new to it.
func (s *startTraces) firstTime(uid types.UID, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.traces[uid]
	if t == nil || t.done[key] {
		return false
	}
	t.done[key] = true
	return true
}

// reported follows the statuses written for pod: the first past Pending
// is logged and timed; the first with the pod Ready (or finished) is the
// last step of its start.
func (s *startTraces) reported(pod *v1.Pod) {
	phase := pod.Status.Phase
	if phase == v1.PodPending {
		return
	}
	s.mu.Lock()
	t := s.traces[pod.UID]
	first := t != nil && !t.running
	if first {
		t.running = true
	}
	s.mu.Unlock()
	if first {
		podStartDuration.Observe(time.Since(t.seen).Seconds())
		t.log(pod, phase)
	}
	switch {
	case podReady(pod):
		s.step(pod.UID, "agent.ready", nil, attribute.String("phase", string(phase)))
	case phase == v1.PodRunning:
		return
	}
	s.forget(pod.UID)
}

// log writes the DEBUG line of a pod that went through every step.
func (t *startTrace) log(pod *v1.Pod, phase v1.PodPhase) {
	if t.synced.IsZero() || t.sandbox.IsZero() || t.containers.IsZero() {
		return
	}
	ms := func(from, to time.Time) time.Duration { return to.Sub(from).Round(time.Millisecond) }
	now := time.Now()
	args := []any{"pod", pod.Name, "namespace", pod.Namespace, "phase", phase,
		"queued", ms(t.seen, t.synced), "sandbox", ms(t.synced, t.sandbox)}
	if !t.network.IsZero() { // not for host-network pods
		args = append(args, "network", ms(t.synced, t.network), "pause", ms(t.synced, t.pause))
	}
	args = append(args, "containers", ms(t.sandbox, t.containers), "status", ms(t.containers, now), "total", ms(t.seen, now))
	slog.Debug("pod started", args...)
}

// podReady says whether the pod's Ready condition is True.
func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// forget drops pod's trace (the pod is gone, or started).
func (s *startTraces) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.traces, uid)
}

// deletionStep records a step of a deleted pod's deletion trace (the one
// its DeletionAnnotation carries), from start to now.
func (s *podSync) deletionStep(name string, start time.Time, err error, attrs ...attribute.KeyValue) {
	if s.pod.DeletionTimestamp != nil {
		s.a.pods.starts.tracer.Deletion().Step(s.pod, name, start, time.Now(), err, attrs...)
	}
}
