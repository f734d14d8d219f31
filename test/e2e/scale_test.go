package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The scheduling shape of issue 12, run against the built `skiff server`
// (no agent) from this separate process as an outside client-go program
// would: Ready nodes with Leases, then pods created by concurrent clients,
// timed from the first create to the last binding a watch sees.

// scaleShape is one size of the run.
type scaleShape struct {
	nodes, pods, creators int
}

// scaleResult is what a run measured.
type scaleResult struct {
	bound       int
	elapsed     time.Duration // first create to last binding
	transitions int32         // control-plane Lease transitions during the run
	holders     int           // distinct control-plane Lease holders seen
	logLines    int           // server log lines from start to the last binding
}

func (r scaleResult) podsPerSecond() float64 { return float64(r.bound) / r.elapsed.Seconds() }

// TestSchedulingAtScale runs the shape small (500 nodes, 1000 pods) and
// checks that every pod is bound, that the control plane kept its leader
// the whole time, and that the server's log stays short although most
// nodes find the default cluster CIDR full (256 /24s).
func TestSchedulingAtScale(t *testing.T) {
	c := startCluster(t)
	r := runScale(t, c, scaleShape{nodes: 500, pods: 1000, creators: 32})
	t.Logf("%d pods bound in %s (%.0f pods/s), %d log lines", r.bound, r.elapsed.Round(time.Millisecond), r.podsPerSecond(), r.logLines)
	if r.bound != 1000 {
		t.Errorf("%d of 1000 pods bound", r.bound)
	}
	if r.transitions != 0 || r.holders != 1 {
		t.Errorf("control-plane Lease: %d transitions, %d holders; want 0 and 1", r.transitions, r.holders)
	}
	if r.logLines > 1000 {
		t.Errorf("server logged %d lines; want under 1000:\n%s", r.logLines, lastLines(c.log.String(), 40))
	}
}

// BenchmarkScheduling5000Nodes10000Pods is issue 12's shape at full size.
// It reports pods bound per second from the first create to the last
// binding, the server's RSS after the run (all of it, and the anonymous
// part: heap and stacks, without the binary's and etcd's mapped files), the control-plane Lease
// transitions and the server's log lines.
func BenchmarkScheduling5000Nodes10000Pods(b *testing.B) {
	for range b.N {
		c := startCluster(b)
		r := runScale(b, c, scaleShape{nodes: 5000, pods: 10000, creators: 32})
		b.ReportMetric(r.podsPerSecond(), "pods/s")
		b.ReportMetric(rssMB(b, c.cmd.Process.Pid), "server-rss-MB")
		b.ReportMetric(statusMB(b, c.cmd.Process.Pid, "RssAnon:"), "server-anon-MB")
		b.ReportMetric(float64(r.transitions), "lease-transitions")
		b.ReportMetric(float64(r.logLines), "log-lines")
		if r.bound != 10000 {
			b.Errorf("%d of 10000 pods bound", r.bound)
		}
		c.stop()
	}
}

func runScale(tb testing.TB, c *cluster, shape scaleShape) scaleResult {
	tb.Helper()
	client := protobufClient(tb, c.kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	leader := watchLeader(ctx, tb, client)
	t0 := time.Now()
	leases := createScaleNodes(ctx, tb, client, shape)
	go leases.renew(ctx, tb)
	tb.Logf("%d nodes and leases created in %s", shape.nodes, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	deadline := time.Now().Add(5 * time.Minute)
	for !nodesSettled(ctx, tb, client, shape.nodes) {
		if time.Now().After(deadline) {
			tb.Fatal("the node controller did not take the nodes in within 5 minutes")
		}
		time.Sleep(2 * time.Second)
	}
	tb.Logf("nodes settled (pod CIDR or network-unavailable) in %s", time.Since(t0).Round(time.Millisecond))
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if path := os.Getenv("SKIFF_BENCH_CPUPROFILE"); path != "" {
		go profileServer(ctx, tb, client, path)
	}
	go createScalePods(ctx, tb, client, shape)
	bound, last := countBindings(tb, w, shape.pods, 15*time.Minute)
	r := scaleResult{bound: bound, elapsed: last.Sub(start), logLines: strings.Count(c.log.String(), "\n")}
	r.transitions, r.holders = leader.result(ctx, tb)
	tb.Logf("server log lines by message: %v", logSummary(c.log.String(), 10))
	tb.Logf("server warnings (the first 10):\n%s", grepLines(c.log.String(), " level=WARN ", 10))
	if path := os.Getenv("SKIFF_BENCH_SERVERLOG"); path != "" {
		if err := os.WriteFile(path, []byte(c.log.String()), 0o644); err != nil {
			tb.Log(err)
		}
	}
	if path := os.Getenv("SKIFF_BENCH_HEAPPROFILE"); path != "" {
		saveProfile(ctx, tb, client, "/debug/pprof/heap", "", path)
	}
	return r
}

// profileServer writes a 20 s CPU profile of the server to path, for
// finding where a run's time goes (SKIFF_BENCH_CPUPROFILE asks for it, as
// SKIFF_BENCH_HEAPPROFILE asks for the heap after the run, and
// SKIFF_BENCH_SERVERLOG for the server's log).
func profileServer(ctx context.Context, tb testing.TB, client kubernetes.Interface, path string) {
	saveProfile(ctx, tb, client, "/debug/pprof/profile", "20", path)
}

// saveProfile writes the server's profile at url to path; seconds, if
// not empty, is how long a CPU profile runs.
func saveProfile(ctx context.Context, tb testing.TB, client kubernetes.Interface, url, seconds, path string) {
	req := client.CoreV1().RESTClient().Get().AbsPath(url)
	if seconds != "" {
		req = req.Param("seconds", seconds)
	}
	data, err := req.DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil && ctx.Err() == nil {
		tb.Logf("profile %s: %v", url, err)
	}
}

// logSummary counts the server's log lines by level and message, most
// first. A line is in skiff's one format (slog's text: "time=… level=WARN
// msg=\"words\" key=value… component=…").
func logSummary(log string, top int) []string {
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		counts[logMessage(line)]++
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return counts[b] - counts[a] })
	var out []string
	for _, k := range keys[:min(top, len(keys))] {
		out = append(out, fmt.Sprintf("%d× %s", counts[k], k))
	}
	return out
}

// grepLines returns the first n lines of log that contain s.
func grepLines(log, s string, n int) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, s) && len(out) < n {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func logMessage(line string) string {
	level := field(line, "level")
	msg := field(line, "msg")
	return level + " " + msg[:min(60, len(msg))]
}

// field is the value of key in a line of slog's text format ("" if none).
func field(line, key string) string {
	_, rest, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		v, _ := strconv.Unquote(q)
		return v
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

// scaleNode is a node of the shape of kube-scheduler's scheduler_perf
// default node: 4 CPUs, 32 Gi, 110 pods, Ready.
func scaleNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now}}},
	}
}

func scalePod(name string) *corev1.Pod {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}}},
	}
}

// parallel runs do(i) for i in [0, n) on workers goroutines and fails tb
// on the first error.
func parallel(tb testing.TB, n, workers int, do func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// protobufClient is fastClient speaking protobuf, as Kubernetes' own
// components do.
func protobufClient(tb testing.TB, kubeconfig string) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return kubernetes.NewForConfigOrDie(cfg)
}

// createScaleNodes registers the shape's nodes, each with a Lease renewed
// now, as kubelets do when they start.
func createScaleNodes(ctx context.Context, tb testing.TB, client kubernetes.Interface, shape scaleShape) *nodeLeases {
	nl := &nodeLeases{client: client, leases: make([]*coordinationv1.Lease, shape.nodes)}
	parallel(tb, shape.nodes, shape.creators, func(i int) error {
		name := fmt.Sprintf("scale-node-%05d", i)
		if _, err := client.CoreV1().Nodes().Create(ctx, scaleNode(name), metav1.CreateOptions{}); err != nil {
			return err
		}
		now, seconds := metav1.NewMicroTime(time.Now()), int32(40)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &seconds, RenewTime: &now}}
		created, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
		nl.leases[i] = created
		return err
	})
	return nl
}

// nodeLeases renews the nodes' Leases as their kubelets would: each every
// 10 s (a quarter of the 40 s lease), spread evenly over the interval.
type nodeLeases struct {
	client kubernetes.Interface
	leases []*coordinationv1.Lease
}

const leaseRenewInterval = 10 * time.Second

func (nl *nodeLeases) renew(ctx context.Context, tb testing.TB) {
	tick := time.NewTicker(leaseRenewInterval / time.Duration(len(nl.leases)))
	defer tick.Stop()
	work := make(chan int, 64)
	defer close(work)
	for range 16 {
		go func() {
			for i := range work {
				l := nl.leases[i]
				now := metav1.NewMicroTime(time.Now())
				l.Spec.RenewTime = &now
				if updated, err := nl.client.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err == nil {
					nl.leases[i] = updated
				} else if ctx.Err() == nil {
					tb.Logf("renew lease %s: %v", l.Name, err)
				}
			}
		}()
	}
	for i := 0; ; i = (i + 1) % len(nl.leases) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case work <- i:
		default: // the renewers are behind: this one waits for its next turn
		}
	}
}

// nodesSettled reports whether every node has a pod CIDR or is tainted
// network-unavailable for want of one.
func nodesSettled(ctx context.Context, tb testing.TB, client kubernetes.Interface, want int) bool {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	settled := 0
	for _, n := range nodes.Items {
		if n.Spec.PodCIDR != "" || hasTaint(&n, corev1.TaintNodeNetworkUnavailable) {
			settled++
		}
	}
	return settled == want
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func createScalePods(ctx context.Context, tb testing.TB, client kubernetes.Interface, shape scaleShape) {
	parallel(tb, shape.pods, shape.creators, func(i int) error {
		_, err := client.CoreV1().Pods("default").Create(ctx, scalePod(fmt.Sprintf("scale-pod-%05d", i)), metav1.CreateOptions{})
		if ctx.Err() != nil {
			return nil
		}
		return err
	})
}

// countBindings reads w until want pods have a node or timeout passes; it
// returns how many were bound and when the last was seen.
func countBindings(tb testing.TB, w watch.Interface, want int, timeout time.Duration) (int, time.Time) {
	bound := map[string]bool{}
	var last time.Time
	deadline := time.After(timeout)
	for len(bound) < want {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				tb.Errorf("pod watch ended with %d of %d bound", len(bound), want)
				return len(bound), last
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && pod.Spec.NodeName != "" && !bound[pod.Name] {
				bound[pod.Name], last = true, time.Now()
			}
		case <-deadline:
			tb.Errorf("%d of %d pods bound after %s", len(bound), want, timeout)
			return len(bound), last
		}
	}
	return len(bound), last
}

// leaderWatch records the control-plane Lease's holders and transitions.
type leaderWatch struct {
	client  kubernetes.Interface
	first   int32
	mu      sync.Mutex
	holders map[string]bool
	stop    func()
}

func watchLeader(ctx context.Context, tb testing.TB, client kubernetes.Interface) *leaderWatch {
	lw := &leaderWatch{client: client, holders: map[string]bool{}}
	lease := lw.get(ctx, tb)
	lw.first = transitions(lease)
	ctx, lw.stop = context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "skiff-controlplane", metav1.GetOptions{}); err == nil {
				lw.note(l)
			}
		}
	}()
	return lw
}

func (lw *leaderWatch) get(ctx context.Context, tb testing.TB) *coordinationv1.Lease {
	var lease *coordinationv1.Lease
	waitUntil(tb, "a control-plane leader", func() bool {
		l, err := lw.client.CoordinationV1().Leases("kube-system").Get(ctx, "skiff-controlplane", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false
		}
		lease = l
		return true
	})
	lw.note(lease)
	return lease
}

func (lw *leaderWatch) note(l *coordinationv1.Lease) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		lw.holders[*l.Spec.HolderIdentity] = true
	}
}

// result stops the watch and returns the transitions since it began and
// the number of holders seen.
func (lw *leaderWatch) result(ctx context.Context, tb testing.TB) (int32, int) {
	lw.stop()
	lease := lw.get(ctx, tb)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return transitions(lease) - lw.first, len(lw.holders)
}

func transitions(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// lastLines returns the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
