package probes

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// containerProbes is what the manager knows of one container of a pod and
// the workers of its probes. All fields are guarded by Manager.mu.
type containerProbes struct {
	uid       types.UID
	namespace string // for logs
	pod       string // name, for logs
	spec      *v1.Container
	podIP     string
	id        string // runtime ID of the current instance; "" before it exists
	running   bool
	startedAt time.Time
	deleting  bool
	workers   [numKinds]*worker // nil where the container has no such probe
}

// started reports whether the startup probe, if any, has succeeded for the
// current instance. Liveness and readiness run only once it has.
func (c *containerProbes) started() bool {
	s := c.workers[Startup]
	return s == nil || s.result == Success
}

// worker runs one probe of one container. It owns at most one armed timer
// and at most one probe in flight. All fields are guarded by Manager.mu.
type worker struct {
	c    *containerProbes
	kind Kind
	spec *v1.Probe

	result  Result // published
	message string // output of the run that set result
	tally   tally
	onHold  bool      // liveness failed or startup decided: wait for a new instance
	seen    time.Time // when the current instance was first seen
	lastRun time.Time // start of the last run for this instance; zero: none yet
	jitter  time.Duration

	timer    clock.Timer // nil unless armed with a delay
	armed    bool        // a timer or a spawned run is pending
	armedAt  time.Time   // the due time it was armed for
	gen      uint64      // bumped on every arm/disarm; stale fires do nothing
	epoch    uint64      // bumped on every new instance; stale runs are dropped
	inflight bool
	cancel   context.CancelFunc
	stopped  bool
}

func newWorker(c *containerProbes, kind Kind, spec *v1.Probe) *worker {
	w := &worker{c: c, kind: kind, spec: spec}
	w.reset(time.Time{})
	return w
}

// reset forgets everything about the previous container instance: the
// published result goes back to the kind's initial value, counts and hold
// are cleared, a pending timer is stopped and a run in flight is cancelled
// (its result will be dropped).
func (w *worker) reset(now time.Time) {
	w.disarm()
	if w.cancel != nil {
		w.cancel()
	}
	w.epoch++
	w.inflight, w.cancel = false, nil
	w.result, w.message = w.kind.initial(), ""
	w.tally, w.onHold = tally{}, false
	w.seen, w.lastRun = now, time.Time{}
	w.jitter = time.Duration(rand.Int64N(int64(seconds(w.spec.PeriodSeconds, defaultPeriod))))
}

// due says when the next run is due, and false when none should be
// scheduled: no running instance, a run in flight, on hold, stopped, gated by
// startup (liveness/readiness wait for it; startup stops once started), or a
// deleted pod's liveness/startup.
//
// The first run for an instance is due initialDelaySeconds after it started,
// the next ones periodSeconds after the previous run started. An instance
// that is already more than a period overdue when first seen (the agent
// restarted and adopted it) is probed after a random part of one period, so
// adopted containers are not all probed at once.
func (w *worker) due() (time.Time, bool) {
	c := w.c
	switch {
	case w.stopped, w.inflight, w.onHold, c.id == "", !c.running,
		c.deleting && w.kind != Readiness,
		(w.kind == Startup) == c.started():
		return time.Time{}, false
	}
	period := seconds(w.spec.PeriodSeconds, defaultPeriod)
	if !w.lastRun.IsZero() {
		return w.lastRun.Add(period), true
	}
	at := c.startedAt.Add(time.Duration(w.spec.InitialDelaySeconds) * time.Second)
	if w.seen.Sub(at) > period {
		at = w.seen.Add(w.jitter)
	}
	return at, true
}

// disarm cancels a pending timer or spawned run.
func (w *worker) disarm() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.armed = false
	w.gen++
}

// record feeds one run's verdict through the thresholds and reports whether
// the published result changed. Once published, a liveness Failure or any
// startup result puts the worker on hold until a new instance.
func (w *worker) record(v Result, output string) (changed bool) {
	if !w.tally.add(v, w.spec.SuccessThreshold, w.spec.FailureThreshold) {
		return false
	}
	changed = w.result != v
	w.result, w.message = v, output
	if w.kind == Startup || (w.kind == Liveness && v == Failure) {
		w.onHold, w.tally = true, tally{}
	}
	return changed
}
