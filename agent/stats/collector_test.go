package stats

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	boot  = time.Unix(1_700_000_000, 0)
	begin = time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
)

// node is a fake machine: a cgroup mount of one version, a /proc, and a
// Collector reading them with a fake clock.
type node struct {
	v     fakeVersion
	fs    string
	proc  string
	clock *testclock.FakeClock
	pods  []Pod
	c     *Collector
}

func newNode(t *testing.T, v fakeVersion) *node {
	n := &node{v: v, fs: t.TempDir(), proc: t.TempDir(), clock: testclock.NewFakeClock(t0)}
	v.mount(t, n.fs)
	n.c = New(Config{
		NodeName: "n1", CgroupFS: n.fs, CgroupRoot: "/skiff", ProcFS: n.proc, Clock: n.clock,
		Pods: func(context.Context) ([]Pod, error) { return n.pods, nil },
	})
	return n
}

// cpuTicks writes /proc with the given user and system ticks; the rest of
// the machine is fixed: 8 000 000 kB of memory, 3 000 000 kB free,
// 1 000 000 kB inactive file pages, 2 500 000 kB anonymous.
func (n *node) cpuTicks(t *testing.T, user, system uint64) {
	writeProc(t, n.proc, [10]uint64{user, 20, system, 90000, 400, 5, 6, 70, 8, 9},
		boot.Unix(), 8_000_000, 3_000_000, 1_000_000, 2_500_000)
}

func (n *node) sample(t *testing.T) {
	t.Helper()
	if err := n.c.sample(context.Background()); err != nil {
		t.Fatalf("sample: %v", err)
	}
}

func TestCollectorSummary(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) { testCollectorSummary(t, v) })
	}
}

// testCollectorSummary samples a node with one running pod three times, 2 s
// apart: first without rates, then with them, then after a container exited.
// A listed container whose cgroup is already gone (sidecar), one not created
// (late) and a listed pod without a cgroup (gone) are left out without an
// error.
func testCollectorSummary(t *testing.T, v fakeVersion) {
	n := newNode(t, v)
	n.pods = []Pod{
		{UID: "u1", Namespace: "default", Name: "web", Containers: []Container{
			{ID: "c1", Name: "app", StartTime: begin.Add(time.Minute)},
			{ID: "c2", Name: "sidecar", StartTime: begin},
			{Name: "late"}, // not created yet: no ID, no start time
		}},
		{UID: "u2", Namespace: "kube-system", Name: "gone", Containers: []Container{{ID: "c3", Name: "x", StartTime: begin}}},
	}
	pod, app := "/skiff/podu1", "/skiff/podu1/c1"
	n.cpuTicks(t, 1000, 300) // with nice, irq, softirq: 1331 ticks, 13.31 s
	v.write(t, n.fs, pod, counters{cpuNs: 2_000_000_000, memory: 100 << 20, inactiveFile: 30 << 20, rss: 50 << 20, limit: 256 << 20})
	v.write(t, n.fs, app, counters{cpuNs: 1_500_000_000, memory: 80 << 20, inactiveFile: 20 << 20, rss: 45 << 20})
	n.sample(t)

	nodeMem := memWant(t0, 5_000_000*1024, 4_000_000*1024, 2_500_000*1024, ptr.To[uint64](4_000_000*1024)) // MemTotal - working set
	want := &v1alpha1.Summary{
		Node: v1alpha1.NodeStats{NodeName: "n1", StartTime: metav1.NewTime(boot),
			CPU: cpuWant(t0, 13_310_000_000, nil), Memory: nodeMem},
		Pods: []v1alpha1.PodStats{{
			PodRef:    v1alpha1.PodReference{Name: "web", Namespace: "default", UID: "u1"},
			StartTime: metav1.NewTime(begin),
			Containers: []v1alpha1.ContainerStats{{
				Name: "app", StartTime: metav1.NewTime(begin.Add(time.Minute)),
				CPU:    cpuWant(t0, 1_500_000_000, nil),
				Memory: memWant(t0, 80<<20, 60<<20, 45<<20, nil), // no limit: no available bytes
			}},
			CPU:    cpuWant(t0, 2_000_000_000, nil),
			Memory: memWant(t0, 100<<20, 70<<20, 50<<20, ptr.To[uint64](186<<20)),
		}},
	}
	checkSummary(t, "first sample", n.c.Summary(), want)

	t1 := t0.Add(2 * time.Second)
	n.clock.SetTime(t1)
	n.cpuTicks(t, 1100, 350) // +1.5 s in 2 s
	v.write(t, n.fs, pod, counters{cpuNs: 3_000_000_000, memory: 120 << 20, inactiveFile: 10 << 20, rss: 60 << 20, limit: 256 << 20})
	v.write(t, n.fs, app, counters{cpuNs: 2_000_000_000, memory: 80 << 20, inactiveFile: 20 << 20, rss: 45 << 20})
	n.sample(t)

	nodeMem.Time = metav1.NewTime(t1)
	want.Node.CPU = cpuWant(t1, 14_810_000_000, ptr.To[uint64](750_000_000))
	ps := &want.Pods[0]
	ps.CPU = cpuWant(t1, 3_000_000_000, ptr.To[uint64](500_000_000))
	ps.Memory = memWant(t1, 120<<20, 110<<20, 60<<20, ptr.To[uint64](146<<20))
	ps.Containers[0].CPU = cpuWant(t1, 2_000_000_000, ptr.To[uint64](250_000_000))
	ps.Containers[0].Memory.Time = metav1.NewTime(t1)
	checkSummary(t, "second sample", n.c.Summary(), want)

	t2 := t1.Add(2 * time.Second)
	n.clock.SetTime(t2)
	v.remove(t, n.fs, app)
	n.sample(t)
	got := n.c.Summary()
	if len(got.Pods) != 1 || len(got.Pods[0].Containers) != 0 {
		t.Errorf("after app exited: %s, want pod web without containers", jsonText(got.Pods))
	}
}

func cpuWant(at time.Time, total uint64, rate *uint64) *v1alpha1.CPUStats {
	return &v1alpha1.CPUStats{Time: metav1.NewTime(at), UsageCoreNanoSeconds: &total, UsageNanoCores: rate}
}

func memWant(at time.Time, used, workingSet, rss uint64, available *uint64) *v1alpha1.MemoryStats {
	return &v1alpha1.MemoryStats{Time: metav1.NewTime(at), UsageBytes: &used,
		WorkingSetBytes: &workingSet, RSSBytes: &rss, AvailableBytes: available}
}

// checkSummary compares summaries as the JSON metrics-server reads.
func checkSummary(t *testing.T, what string, got, want *v1alpha1.Summary) {
	t.Helper()
	if g, w := jsonText(got), jsonText(want); g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func jsonText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestCPUStats(t *testing.T) {
	cases := []struct {
		name string
		prev *usage
		cur  usage
		want *uint64
	}{
		{"first reading", nil, usage{time: t0, cpu: 100}, nil},
		{"quarter core", &usage{time: t0, cpu: 1_000_000_000}, usage{time: t0.Add(4 * time.Second), cpu: 2_000_000_000}, ptr.To[uint64](250_000_000)},
		{"two cores over a long time", &usage{time: t0, cpu: 0}, usage{time: t0.Add(time.Hour), cpu: 7200 * 1_000_000_000}, ptr.To[uint64](2_000_000_000)},
		{"idle", &usage{time: t0, cpu: 5}, usage{time: t0.Add(time.Second), cpu: 5}, ptr.To[uint64](0)},
		{"same time", &usage{time: t0, cpu: 1}, usage{time: t0, cpu: 2}, nil},
		{"counter went back", &usage{time: t0, cpu: 1000}, usage{time: t0.Add(time.Second), cpu: 10}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := cpuStats(tc.prev, tc.cur)
			if *got.UsageCoreNanoSeconds != tc.cur.cpu || !got.Time.Time.Equal(tc.cur.time) {
				t.Errorf("total %d at %v, want %d at %v", *got.UsageCoreNanoSeconds, got.Time, tc.cur.cpu, tc.cur.time)
			}
			if !ptr.Equal(got.UsageNanoCores, tc.want) {
				t.Errorf("rate = %v, want %v", ptr.Deref(got.UsageNanoCores, 0), ptr.Deref(tc.want, 0))
			}
		})
	}
}

func TestSummaryBeforeSample(t *testing.T) {
	c := New(Config{NodeName: "n1", Pods: func(context.Context) ([]Pod, error) { return nil, nil }})
	got := c.Summary()
	if got.Node.NodeName != "n1" || got.Node.CPU != nil || got.Pods == nil || len(got.Pods) != 0 {
		t.Errorf("Summary before a sample = %s, want the node's name and no pods", jsonText(got))
	}
}

func TestSampleListError(t *testing.T) {
	n := newNode(t, versions[0])
	n.cpuTicks(t, 1000, 300)
	n.sample(t)
	before := jsonText(n.c.Summary())

	errList := errors.New("containerd down")
	n.c.cfg.Pods = func(context.Context) ([]Pod, error) { return nil, errList }
	n.clock.Step(time.Second)
	n.cpuTicks(t, 2000, 300)
	if err := n.c.sample(context.Background()); !errors.Is(err, errList) {
		t.Errorf("sample: %v, want the listing's error", err)
	}
	if after := jsonText(n.c.Summary()); after != before {
		t.Errorf("a failed sample changed the summary:\n%s\nto %s", before, after)
	}
}

// TestSampleUnreadable: a cgroup that exists but cannot be parsed is left
// out and reported, and the rest of the sample is kept.
func TestSampleUnreadable(t *testing.T) {
	v := versions[1]
	n := newNode(t, v)
	n.cpuTicks(t, 1000, 300)
	n.pods = []Pod{{UID: "u1", Name: "web", Containers: []Container{{ID: "c1", Name: "app"}, {ID: "c2", Name: "db"}}}}
	v.write(t, n.fs, "/skiff/podu1", counters{memory: 10})
	v.write(t, n.fs, "/skiff/podu1/c1", counters{memory: 10})
	v.write(t, n.fs, "/skiff/podu1/c2", counters{memory: 10})
	writeFile(t, v.usageFile(n.fs, "/skiff/podu1/c2"), "garbage")
	if err := n.c.sample(context.Background()); err == nil {
		t.Error("sample: no error for an unreadable cgroup")
	}
	got := n.c.Summary()
	if len(got.Pods) != 1 || len(got.Pods[0].Containers) != 1 || got.Pods[0].Containers[0].Name != "app" || got.Node.CPU == nil {
		t.Errorf("summary = %s, want node, pod web and container app", jsonText(got))
	}
}

// TestRun: Run samples at once, then every Interval of its clock, and
// stops with ctx.
func TestRun(t *testing.T) {
	n := newNode(t, versions[1])
	n.c.cfg.Interval = 10 * time.Second
	n.cpuTicks(t, 1000, 300)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		n.c.Run(ctx)
		close(done)
	}()
	waitFor(t, "first sample", func(s *v1alpha1.Summary) bool { return s.Node.CPU != nil }, n.c)
	if rate := n.c.Summary().Node.CPU.UsageNanoCores; rate != nil {
		t.Errorf("rate after one sample = %d, want none", *rate)
	}

	n.cpuTicks(t, 1300, 500) // +5 s in 10 s
	n.clock.Step(10 * time.Second)
	waitFor(t, "second sample", func(s *v1alpha1.Summary) bool { return s.Node.CPU.UsageNanoCores != nil }, n.c)
	if rate := *n.c.Summary().Node.CPU.UsageNanoCores; rate != 500_000_000 {
		t.Errorf("rate = %d, want 500000000", rate)
	}
	cancel()
	<-done
}

// waitFor polls the Collector's summary until ok, for at most 5 s.
func waitFor(t *testing.T, what string, ok func(*v1alpha1.Summary) bool, c *Collector) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok(c.Summary()) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSummaryConcurrent calls Summary while samples are taken; run with
// -race.
func TestSummaryConcurrent(t *testing.T) {
	n := newNode(t, versions[0])
	n.cpuTicks(t, 1000, 300)
	n.pods = []Pod{{UID: "u1", Name: "web", Containers: []Container{{ID: "c1", Name: "app"}}}}
	n.v.write(t, n.fs, "/skiff/podu1", counters{memory: 10})
	n.v.write(t, n.fs, "/skiff/podu1/c1", counters{memory: 10})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				_ = jsonText(n.c.Summary())
			}
		})
	}
	for range 50 {
		n.clock.Step(time.Second)
		n.sample(t)
	}
	wg.Wait()
	if got := n.c.Summary(); len(got.Pods) != 1 || got.Pods[0].CPU.UsageNanoCores == nil {
		t.Errorf("summary = %s", jsonText(got))
	}
}

// TestLive: a live reading has the node's CPU rate since the last sample
// and is not stored (Summary still shows the sample).
func TestLive(t *testing.T) {
	n := newNode(t, versions[0])
	n.cpuTicks(t, 1000, 300)
	n.sample(t)
	n.clock.Step(2 * time.Second)
	n.cpuTicks(t, 1100, 300)
	live, err := n.c.Live(context.Background())
	if err != nil || live.Node.CPU == nil || live.Node.CPU.UsageNanoCores == nil || *live.Node.CPU.UsageNanoCores == 0 {
		t.Fatalf("Live = %s, %v, want a CPU rate since the sample", jsonText(live), err)
	}
	if stored := n.c.Summary(); stored.Node.CPU.UsageNanoCores != nil {
		t.Errorf("Summary after Live = %s, want the one sample's (no rate)", jsonText(stored))
	}
}
