package probes

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestWorkerDue(t *testing.T) {
	spec := &v1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 10}
	for _, tc := range []struct {
		name  string
		kind  Kind
		setup func(c *containerProbes, w *worker)
		at    time.Time // zero: not due
	}{
		{name: "first run after the initial delay", kind: Liveness, at: t0.Add(5 * time.Second)},
		{name: "next run a period after the last", kind: Liveness, at: t0.Add(40 * time.Second),
			setup: func(_ *containerProbes, w *worker) { w.lastRun = t0.Add(30 * time.Second) }},
		{name: "no container yet", kind: Liveness, setup: func(c *containerProbes, _ *worker) { c.id = "" }},
		{name: "not running", kind: Readiness, setup: func(c *containerProbes, _ *worker) { c.running = false }},
		{name: "in flight", kind: Readiness, setup: func(_ *containerProbes, w *worker) { w.inflight = true }},
		{name: "on hold", kind: Liveness, setup: func(_ *containerProbes, w *worker) { w.onHold = true }},
		{name: "stopped", kind: Readiness, setup: func(_ *containerProbes, w *worker) { w.stopped = true }},
		{name: "liveness waits for startup", kind: Liveness, setup: withStartup(Unknown)},
		{name: "readiness after startup", kind: Readiness, setup: withStartup(Success), at: t0.Add(5 * time.Second)},
		{name: "startup stops once started", kind: Startup, setup: func(_ *containerProbes, w *worker) { w.result = Success }},
		{name: "deleting stops liveness", kind: Liveness, setup: func(c *containerProbes, _ *worker) { c.deleting = true }},
		{name: "deleting keeps readiness", kind: Readiness, at: t0.Add(5 * time.Second),
			setup: func(c *containerProbes, _ *worker) { c.deleting = true }},
		{name: "adopted: jittered from first sight", kind: Liveness, at: t0.Add(time.Hour + 3*time.Second),
			setup: func(_ *containerProbes, w *worker) { w.seen, w.jitter = t0.Add(time.Hour), 3*time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &containerProbes{id: "c1", running: true, startedAt: t0}
			w := newWorker(c, tc.kind, spec)
			c.workers[tc.kind] = w
			w.seen = t0
			if tc.setup != nil {
				tc.setup(c, w)
			}
			at, ok := w.due()
			if ok != !tc.at.IsZero() || !at.Equal(tc.at) {
				t.Fatalf("due = %v, %v; want %v", at, ok, tc.at)
			}
		})
	}
}

// withStartup gives the container a startup worker with result r.
func withStartup(r Result) func(*containerProbes, *worker) {
	return func(c *containerProbes, _ *worker) {
		s := newWorker(c, Startup, &v1.Probe{})
		s.result = r
		c.workers[Startup] = s
	}
}
