package probes

import (
	"runtime"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestThresholds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kind      Kind
		s, f      int32
		runs      []outcome
		results   []Result // published after each run
		told      []Result // what ChangeFunc heard
		wantCalls int      // over len(runs)+2 periods
	}{
		{name: "readiness fails after 3", kind: Readiness, s: 1, f: 3, runs: []outcome{ok, bad, bad, bad, ok},
			results: []Result{Success, Success, Success, Failure, Success}, told: []Result{Success, Failure, Success}, wantCalls: 7},
		{name: "readiness needs 2 successes", kind: Readiness, s: 2, f: 1, runs: []outcome{ok, ok, bad, ok, ok},
			results: []Result{Failure, Success, Failure, Failure, Success}, told: []Result{Success, Failure, Success}, wantCalls: 7},
		{name: "liveness fails then holds", kind: Liveness, s: 1, f: 3, runs: []outcome{ok, bad, bad, bad},
			results: []Result{Success, Success, Success, Failure}, told: []Result{Failure}, wantCalls: 4},
		{name: "failures reset by a success", kind: Liveness, s: 1, f: 2, runs: []outcome{bad, ok, bad, ok},
			results: []Result{Success, Success, Success, Success}, wantCalls: 6},
		{name: "warning counts as success", kind: Readiness, s: 1, f: 1, runs: []outcome{warn},
			results: []Result{Success}, told: []Result{Success}, wantCalls: 3},
		{name: "unknown without error counts as failure", kind: Readiness, s: 1, f: 1, runs: []outcome{ok, {res: Unknown}},
			results: []Result{Success, Failure}, told: []Result{Success, Failure, Success}, wantCalls: 4},
		{name: "errors count for nothing and are retried", kind: Readiness, s: 1, f: 1, runs: []outcome{oops, oops, oops, ok},
			results: []Result{Failure, Success}, told: []Result{Success}, wantCalls: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.run.script["app/"+tc.kind.String()] = tc.runs
			c := v1.Container{Name: "app"}
			*kindField(&c, tc.kind) = probe("app", tc.kind, thresholds(tc.s, tc.f))
			h.update(testPod(c), running("app", "id1"))
			var got []Result
			for i := range len(tc.runs) + 2 {
				if i > 0 {
					h.step(time.Second)
				}
				if i < len(tc.results) {
					got = append(got, h.result("app", tc.kind))
				}
			}
			if !slices.Equal(got, tc.results) {
				t.Errorf("results = %v, want %v", got, tc.results)
			}
			var want []string
			for _, r := range tc.told {
				want = append(want, "uid-1/app/"+tc.kind.String()+"="+r.String())
			}
			if told := h.told(); !slices.Equal(told, want) {
				t.Errorf("told %v, want %v", told, want)
			}
			if n := h.run.count("app/" + tc.kind.String()); n != tc.wantCalls {
				t.Errorf("%d runs, want %d", n, tc.wantCalls)
			}
		})
	}
}

// kindField is the container's probe field of kind k.
func kindField(c *v1.Container, k Kind) **v1.Probe {
	switch k {
	case Startup:
		return &c.StartupProbe
	case Liveness:
		return &c.LivenessProbe
	}
	return &c.ReadinessProbe
}

func TestInitialDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		started time.Time
		// runs after each one-second step, starting with the Update at t0
		runs []int
	}{
		{name: "fresh container", started: t0, runs: []int{0, 0, 0, 0, 0, 1, 1, 2, 2, 3}},
		{name: "started 3s ago", started: t0.Add(-3 * time.Second), runs: []int{0, 0, 1, 1, 2}},
		{name: "delay long over", started: t0.Add(-6 * time.Second), runs: []int{1, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := probe("app", Liveness, func(p *v1.Probe) { p.InitialDelaySeconds, p.PeriodSeconds = 5, 2 })
			h.update(testPod(v1.Container{Name: "app", LivenessProbe: p}), ContainerState{Name: "app", ID: "id1", Running: true, StartedAt: tc.started})
			var got []int
			for i := range tc.runs {
				if i > 0 {
					h.step(time.Second)
				}
				got = append(got, h.run.count("app/Liveness"))
			}
			if !slices.Equal(got, tc.runs) {
				t.Fatalf("runs after each second = %v, want %v", got, tc.runs)
			}
		})
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t)
	h.run.script["app/Startup"] = []outcome{bad, ok}
	h.update(testPod(v1.Container{Name: "app",
		StartupProbe:   probe("app", Startup, thresholds(1, 3)),
		LivenessProbe:  probe("app", Liveness),
		ReadinessProbe: probe("app", Readiness),
	}), running("app", "id1"))

	if s, ok := h.m.Started(uid, "app"); s || !ok {
		t.Fatalf("Started = %v, %v before the startup probe succeeded", s, ok)
	}
	if n := h.run.count("app/Liveness") + h.run.count("app/Readiness"); n != 0 {
		t.Fatalf("%d liveness/readiness runs before start", n)
	}
	h.step(time.Second) // startup succeeds; the others start at once
	if s, _ := h.m.Started(uid, "app"); !s {
		t.Fatal("not started after the startup probe succeeded")
	}
	if r, ok := h.m.Ready(uid, "app"); !r || !ok {
		t.Fatalf("Ready = %v, %v after the first readiness success", r, ok)
	}
	h.step(time.Second)
	counts := []int{h.run.count("app/Startup"), h.run.count("app/Liveness"), h.run.count("app/Readiness")}
	if !slices.Equal(counts, []int{2, 2, 2}) {
		t.Fatalf("startup/liveness/readiness runs = %v, want [2 2 2]: startup stops once started", counts)
	}
	want := []string{"uid-1/app/Startup=Success", "uid-1/app/Readiness=Success"}
	if told := h.told(); !slices.Equal(told, want) {
		t.Fatalf("told %v, want %v", told, want)
	}
}

func TestStartupFailureHoldsUntilNewContainer(t *testing.T) {
	h := newHarness(t)
	h.run.script["app/Startup"] = []outcome{bad, bad}
	pod := testPod(v1.Container{Name: "app", StartupProbe: probe("app", Startup, thresholds(1, 2)), LivenessProbe: probe("app", Liveness)})
	h.update(pod, running("app", "id1"))
	h.step(time.Second)
	h.step(time.Second)
	h.step(time.Second)
	if n, l := h.run.count("app/Startup"), h.run.count("app/Liveness"); n != 2 || l != 0 {
		t.Fatalf("startup ran %d times (want 2, then hold), liveness %d (want 0)", n, l)
	}
	if r := h.result("app", Startup); r != Failure {
		t.Fatalf("startup result %v, want Failure", r)
	}
	h.update(pod, h.running("app", "id2")) // the agent restarted it
	if r := h.result("app", Startup); r != Success {
		t.Fatalf("startup result %v for the new container, want Success (scripts exhausted)", r)
	}
	want := []string{"uid-1/app/Startup=Failure", "uid-1/app/Startup=Success"}
	if told := h.told(); !slices.Equal(told, want) {
		t.Fatalf("told %v, want %v", told, want)
	}
}

func TestLivenessFailureHoldsUntilNewContainer(t *testing.T) {
	h := newHarness(t)
	h.run.script["app/Liveness"] = []outcome{bad}
	pod := testPod(v1.Container{Name: "app", LivenessProbe: probe("app", Liveness)})
	h.update(pod, running("app", "id1"))
	h.step(time.Second)
	if n := h.run.count("app/Liveness"); n != 1 || h.result("app", Liveness) != Failure {
		t.Fatalf("%d runs, result %v; want 1 run and Failure held", n, h.result("app", Liveness))
	}
	h.update(pod, h.running("app", "id2"))
	if r := h.result("app", Liveness); r != Success {
		t.Fatalf("result %v after restart, want Success", r)
	}
	if n := h.run.count("app/Liveness"); n != 2 {
		t.Fatalf("%d runs, want probing to resume for the new container", n)
	}
	if told := h.told(); !slices.Equal(told, []string{"uid-1/app/Liveness=Failure"}) {
		t.Fatalf("told %v: resets by Update are not reported", told)
	}
}

func TestReadiness(t *testing.T) {
	pod := testPod(
		v1.Container{Name: "plain"},
		v1.Container{Name: "app", ReadinessProbe: probe("app", Readiness, thresholds(1, 1))},
	)
	for _, tc := range []struct {
		name      string
		container string
		script    []outcome
		states    []ContainerState
		ready, ok bool
	}{
		{name: "no probe: caller decides", container: "plain", states: []ContainerState{running("plain", "p1")}},
		{name: "unknown pod container", container: "ghost"},
		{name: "not created yet", container: "app", ok: true},
		{name: "before the first run", container: "app", script: []outcome{oops, oops, oops}, states: []ContainerState{running("app", "a1")}, ok: true},
		{name: "after a success", container: "app", states: []ContainerState{running("app", "a1")}, ready: true, ok: true},
		{name: "after a failure", container: "app", script: []outcome{bad}, states: []ContainerState{running("app", "a1")}, ok: true},
		{name: "exited", container: "app", states: []ContainerState{{Name: "app", ID: "a1"}}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.run.script["app/Readiness"] = tc.script
			h.update(pod, tc.states...)
			if r, ok := h.m.Ready(uid, tc.container); r != tc.ready || ok != tc.ok {
				t.Fatalf("Ready = %v, %v; want %v, %v", r, ok, tc.ready, tc.ok)
			}
		})
	}
}

func TestReadyGoesBackOnRestartAndStop(t *testing.T) {
	h := newHarness(t)
	h.run.script["app/Readiness"] = []outcome{ok, oops, oops, oops}
	pod := testPod(v1.Container{Name: "app", ReadinessProbe: probe("app", Readiness)})
	h.update(pod, running("app", "id1"))
	if r, _ := h.m.Ready(uid, "app"); !r {
		t.Fatal("not ready after a success")
	}
	h.update(pod, h.running("app", "id2")) // restarted: its run errors
	if r, _ := h.m.Ready(uid, "app"); r {
		t.Fatal("a new container inherited readiness")
	}
	h.step(time.Second)
	h.update(pod, ContainerState{Name: "app", ID: "id2"})
	if r, _ := h.m.Ready(uid, "app"); r || h.clk.HasWaiters() {
		t.Fatalf("ready %v, timer armed %v for an exited container", r, h.clk.HasWaiters())
	}
}

func TestChangeFuncOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	h.update(testPod(v1.Container{Name: "app", LivenessProbe: probe("app", Liveness), ReadinessProbe: probe("app", Readiness)}), running("app", "id1"))
	for range 5 {
		h.step(time.Second)
	}
	if n := h.run.count("app/Liveness"); n != 6 {
		t.Fatalf("%d liveness runs, want 6", n)
	}
	if told := h.told(); !slices.Equal(told, []string{"uid-1/app/Readiness=Success"}) {
		t.Fatalf("told %v, want only readiness turning Success", told)
	}
}

func TestUpdateDoesNotPushProbesBack(t *testing.T) {
	h := newHarness(t)
	pod := testPod(v1.Container{Name: "app", LivenessProbe: probe("app", Liveness, func(p *v1.Probe) { p.PeriodSeconds = 3 })})
	h.update(pod, running("app", "id1"))
	for range 3 {
		h.step(time.Second)
		h.update(pod, running("app", "id1"))
	}
	if n := h.run.count("app/Liveness"); n != 2 {
		t.Fatalf("%d runs over 3s with a 3s period and an Update every second, want 2", n)
	}
}

func TestRemoveStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t)
	h.run.block = make(chan struct{})
	pod := testPod(v1.Container{Name: "app", StartupProbe: probe("app", Startup)},
		v1.Container{Name: "web", LivenessProbe: probe("web", Liveness, func(p *v1.Probe) { p.InitialDelaySeconds = 30 }),
			ReadinessProbe: probe("web", Readiness, func(p *v1.Probe) { p.InitialDelaySeconds = 30 })})
	h.m.Update(pod, "10.244.0.5", []ContainerState{running("app", "a1"), running("web", "w1")})
	if !h.clk.HasWaiters() {
		t.Fatal("no timers armed for the delayed probes")
	}
	h.m.Remove(uid) // cancels app's startup run, blocked in the runner
	h.m.wg.Wait()
	if h.clk.HasWaiters() {
		t.Fatalf("%d timers left after Remove", h.clk.Waiters())
	}
	h.step(time.Minute)
	if n := h.run.count("web/Liveness") + h.run.count("web/Readiness"); n != 0 {
		t.Fatalf("%d runs after Remove", n)
	}
	if told := h.told(); len(told) != 0 {
		t.Fatalf("told %v after Remove", told)
	}
	if _, ok := h.m.Ready(uid, "web"); ok {
		t.Fatal("removed pod still has a readiness worker")
	}
	h.m.Remove(uid) // idempotent
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Remove, %d before", n, before)
	}
}

func TestDeletion(t *testing.T) {
	h := newHarness(t)
	h.run.script["app/Liveness"] = []outcome{bad}
	pod := testPod(v1.Container{Name: "app", StartupProbe: probe("app", Startup, func(p *v1.Probe) { p.InitialDelaySeconds = 60 }),
		LivenessProbe: probe("app", Liveness), ReadinessProbe: probe("app", Readiness)})
	h.update(pod, running("app", "id1"))
	pod.DeletionTimestamp = &metav1.Time{Time: t0}
	h.update(pod, running("app", "id1"))
	if s, _ := h.m.Started(uid, "app"); !s || h.result("app", Liveness) != Success {
		t.Fatalf("started %v, liveness %v; a deleted pod's startup and liveness turn Success", s, h.result("app", Liveness))
	}
	h.step(time.Second)
	h.step(time.Second)
	if s, l, r := h.run.count("app/Startup"), h.run.count("app/Liveness"), h.run.count("app/Readiness"); s != 0 || l != 0 || r != 3 {
		t.Fatalf("startup/liveness/readiness runs = %d/%d/%d, want 0/0/3 (readiness starts once deletion marks startup done)", s, l, r)
	}
}

func TestAdoptedContainerIsProbedWithinAPeriod(t *testing.T) {
	h := newHarness(t)
	p := probe("app", Liveness, func(p *v1.Probe) { p.PeriodSeconds = 10 })
	h.update(testPod(v1.Container{Name: "app", LivenessProbe: p}),
		ContainerState{Name: "app", ID: "id1", Running: true, StartedAt: t0.Add(-time.Hour)})
	h.step(10 * time.Second)
	if n := h.run.count("app/Liveness"); n != 1 {
		t.Fatalf("%d runs in the first period after adoption, want 1", n)
	}
}

func TestEvents(t *testing.T) {
	h := newHarness(t)
	h.run.script["app/Liveness"] = []outcome{warn, oops, oops, oops, bad}
	h.update(testPod(v1.Container{Name: "app", LivenessProbe: probe("app", Liveness, thresholds(1, 3))}), running("app", "id1"))
	h.step(time.Second)
	h.step(time.Second)
	var got []string
	for _, e := range h.events {
		got = append(got, e.Reason+": "+e.Message)
	}
	want := []string{"ProbeWarning: Liveness probe warning: moved", "Unhealthy: Liveness probe errored: cannot exec", "Unhealthy: Liveness probe failed: boom"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestSidecarsAreProbed(t *testing.T) {
	h := newHarness(t)
	pod := testPod(v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "setup", ReadinessProbe: probe("setup", Readiness)},
		{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), ReadinessProbe: probe("proxy", Readiness)},
	}
	h.update(pod, running("proxy", "s1"))
	if r, ok := h.m.Ready(uid, "proxy"); !r || !ok {
		t.Fatalf("sidecar Ready = %v, %v", r, ok)
	}
	if _, ok := h.m.Ready(uid, "setup"); ok {
		t.Fatal("a plain init container got a probe worker")
	}
}

func TestProbeGracePeriod(t *testing.T) {
	c := &v1.Container{LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](5)},
		ReadinessProbe: &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](7)}, StartupProbe: &v1.Probe{}}
	for _, tc := range []struct {
		kind Kind
		want time.Duration
		ok   bool
	}{{Liveness, 5 * time.Second, true}, {Startup, 0, false}, {Readiness, 0, false}} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			if got, ok := ProbeGracePeriod(c, tc.kind); got != tc.want || ok != tc.ok {
				t.Fatalf("ProbeGracePeriod = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
