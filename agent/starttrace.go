package agent

import (
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// startTraces time each pod's first start step by step, after the
// kubelet's pod startup latency tracker: from the watch event that brings
// the pod to the node to the Running status written. One DEBUG line per
// pod (`--log-level debug`) says where its start spent its time. Safe for
// concurrent use; it measures in real time and decides nothing.
type startTraces struct {
	mu     sync.Mutex
	traces map[types.UID]*startTrace
}

// startTrace holds when each step of one pod's start ended. The sandbox
// step includes the network (CNI ADD) and the pause container, which run
// at the same time.
type startTrace struct {
	seen, synced, network, pause, sandbox, containers time.Time
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
		s.traces[pod.UID] = &startTrace{seen: time.Now()}
	}
}

// mark records the end of step, the first time only.
func (s *startTraces) mark(uid types.UID, step startStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.traces[uid]
	if t == nil {
		return
	}
	at := []*time.Time{stepSynced: &t.synced, stepNetwork: &t.network, stepPause: &t.pause,
		stepSandbox: &t.sandbox, stepContainers: &t.containers}[step]
	if at.IsZero() {
		*at = time.Now()
	}
}

// reported ends pod's trace once a status past Pending was written for
// it, logging the trace if the pod went through every step.
func (s *startTraces) reported(pod *v1.Pod, phase v1.PodPhase) {
	if phase == v1.PodPending {
		return
	}
	s.mu.Lock()
	t := s.traces[pod.UID]
	delete(s.traces, pod.UID)
	s.mu.Unlock()
	if t != nil {
		podStartDuration.Observe(time.Since(t.seen).Seconds())
	}
	if t == nil || t.synced.IsZero() || t.sandbox.IsZero() || t.containers.IsZero() {
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

// forget drops pod's trace (the pod is gone).
func (s *startTraces) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.traces, uid)
}
