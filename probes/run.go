package probes

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// schedule arms w for its next due run, or disarms it when none is due. A
// worker already armed for the same due time is left alone, so calling it
// on every Update does not push probes back. m.mu is held.
func (m *Manager) schedule(w *worker, now time.Time) {
	at, ok := w.due()
	if !ok {
		w.disarm()
		return
	}
	if w.armed && w.armedAt.Equal(at) {
		return
	}
	w.disarm()
	w.armed, w.armedAt = true, at
	gen := w.gen
	if d := at.Sub(now); d > 0 {
		w.timer = m.clock.AfterFunc(d, func() { m.spawn(func() { m.fire(w, gen) }) })
		return
	}
	m.spawn(func() { m.fire(w, gen) })
}

// spawn runs f in a new goroutine unless the manager is closed. It takes no
// other lock and never touches the clock, so timer callbacks may call it
// (the fake clock runs them with its own lock held).
func (m *Manager) spawn(f func()) {
	m.spawnMu.Lock()
	defer m.spawnMu.Unlock()
	if m.spawnClosed {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// run is one probe run in flight, as begun under the lock.
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	epoch  uint64
	spec   *v1.Probe
	target Target
}

// fire is the body of a probe goroutine: begin under the lock, probe
// without it, then record and tell.
func (m *Manager) fire(w *worker, gen uint64) {
	r, ok := m.begin(w, gen)
	if !ok {
		return
	}
	res, out, err := m.attempt(r)
	m.tell(m.finish(w, r, res, out, err))
}

// begin checks that the fire is current and the run still due, and marks
// the run in flight.
func (m *Manager) begin(w *worker, gen uint64) (run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.stopped || w.gen != gen {
		return run{}, false
	}
	w.timer, w.armed = nil, false
	now := m.clock.Now()
	if at, ok := w.due(); !ok || at.After(now) {
		m.schedule(w, now)
		return run{}, false
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.inflight, w.cancel, w.lastRun = true, cancel, now
	c := w.c
	return run{ctx: ctx, cancel: cancel, epoch: w.epoch, spec: w.spec,
		target: Target{PodIP: c.podIP, Container: c.spec, ContainerID: c.id}}, true
}

// attempt runs the probe, again up to maxAttempts times while the Runner
// returns an error (kubelet retries errors, never failures).
func (m *Manager) attempt(r run) (res Result, out string, err error) {
	for range maxAttempts {
		res, out, err = m.runner.Probe(r.ctx, r.spec, r.target)
		if err == nil || r.ctx.Err() != nil {
			break
		}
	}
	return res, out, err
}

// notice is what a finished run has to tell, delivered after the lock is
// released.
type notice struct {
	event   *Event
	changed bool
	result  Result
	message string
	w       *worker
}

// finish records a run's outcome unless the worker was stopped or moved to
// a new container meanwhile, and schedules the next run. An errored run
// counts for nothing.
func (m *Manager) finish(w *worker, r run, res Result, out string, err error) notice {
	r.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.stopped || r.epoch != w.epoch {
		return notice{}
	}
	w.inflight, w.cancel = false, nil
	c, now := w.c, m.clock.Now()
	n := notice{w: w, event: runEvent(w, res, out, err)}
	if err != nil {
		m.log.Debug("probe errored", "namespace", c.namespace, "pod", c.pod, "container", c.spec.Name, "probe", w.kind.String(), "err", err)
	} else if w.record(res.verdict(), out) {
		n.changed, n.result, n.message = true, w.result, w.message
	}
	for _, s := range c.live() { // a startup success ungates its siblings
		m.schedule(s, now)
	}
	return n
}

// runEvent is the kubelet-style event for one run, nil for a plain success.
func runEvent(w *worker, res Result, out string, err error) *Event {
	e := &Event{PodUID: w.c.uid, Container: w.c.spec.Name, Kind: w.kind, Reason: "Unhealthy"}
	switch {
	case err != nil:
		e.Message = fmt.Sprintf("%s probe errored: %v", w.kind, err)
	case res == Warning:
		e.Reason, e.Message = "ProbeWarning", fmt.Sprintf("%s probe warning: %s", w.kind, out)
	case res.verdict() == Failure:
		e.Message = fmt.Sprintf("%s probe failed: %s", w.kind, out)
	default:
		return nil
	}
	return e
}

// tell delivers a notice to the events function and ChangeFunc, without the
// lock.
func (m *Manager) tell(n notice) {
	if n.event != nil && m.onEvent != nil {
		m.onEvent(*n.event)
	}
	if n.changed && m.onChange != nil {
		m.onChange(n.w.c.uid, n.w.c.spec.Name, n.w.kind, n.result, n.message)
	}
}
