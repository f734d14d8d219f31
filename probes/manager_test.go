package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const uid = types.UID("uid-1")

// outcome is one scripted run.
type outcome struct {
	res Result
	out string
	err error
}

var (
	ok   = outcome{res: Success}
	bad  = outcome{res: Failure, out: "boom"}
	warn = outcome{res: Warning, out: "moved"}
	oops = outcome{err: errors.New("cannot exec")}
)

// fakeRunner plays scripted outcomes per probe. A probe is named by its exec
// command ("app/Liveness"); an exhausted script answers Success.
type fakeRunner struct {
	mu     sync.Mutex
	script map[string][]outcome
	calls  map[string]int
	block  chan struct{} // when set, every run waits for it or for ctx
}

func (f *fakeRunner) Probe(ctx context.Context, spec *v1.Probe, _ Target) (Result, string, error) {
	name := spec.Exec.Command[0]
	f.mu.Lock()
	f.calls[name]++
	o := ok
	if s := f.script[name]; len(s) > 0 {
		o, f.script[name] = s[0], s[1:]
	}
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return Unknown, "", ctx.Err()
		}
	}
	return o.res, o.out, o.err
}

func (f *fakeRunner) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// harness drives a Manager with a fake clock and records what it tells.
type harness struct {
	t       *testing.T
	clk     *testclock.FakeClock
	run     *fakeRunner
	m       *Manager
	mu      sync.Mutex
	changes []string
	events  []Event
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clk: testclock.NewFakeClock(t0), run: &fakeRunner{script: map[string][]outcome{}, calls: map[string]int{}}}
	h.m = NewManager(h.run, func(u types.UID, c string, k Kind, r Result, _ string) {
		h.m.Result(u, c, k) // ChangeFunc may call back into the Manager
		h.mu.Lock()
		defer h.mu.Unlock()
		h.changes = append(h.changes, fmt.Sprintf("%s/%s/%s=%s", u, c, k, r))
	}, WithClock(h.clk), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithEvents(func(e Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, e)
	}))
	t.Cleanup(h.m.Close)
	return h
}

// update tells the manager the pod's state and waits for the runs it starts.
func (h *harness) update(pod *v1.Pod, states ...ContainerState) {
	h.m.Update(pod, "10.244.0.5", states)
	h.m.wg.Wait()
}

// step moves the clock and waits for the runs that starts.
func (h *harness) step(d time.Duration) {
	h.clk.Step(d)
	h.m.wg.Wait()
}

func (h *harness) told() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.changes)
}

func (h *harness) result(container string, k Kind) Result {
	r, _ := h.m.Result(uid, container, k)
	return r
}

// probe returns an exec probe named container/kind for the fake runner.
func probe(name string, k Kind, mod ...func(*v1.Probe)) *v1.Probe {
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{name + "/" + k.String()}}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
	for _, f := range mod {
		f(p)
	}
	return p
}

func thresholds(s, f int32) func(*v1.Probe) {
	return func(p *v1.Probe) { p.SuccessThreshold, p.FailureThreshold = s, f }
}

func testPod(cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Containers: cs}}
}

func running(name, id string) ContainerState {
	return ContainerState{Name: name, ID: id, Running: true, StartedAt: t0}
}

// running is a container that started now.
func (h *harness) running(name, id string) ContainerState {
	return ContainerState{Name: name, ID: id, Running: true, StartedAt: h.clk.Now()}
}
