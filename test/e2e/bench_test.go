package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/controlplane"
)

// The benchmarks run against the skiff binary, as a user's cluster would,
// with client-go's protobuf clients and no client-side rate limit. Results
// and the machine they were measured on are in docs/perf.md.

func fastClient(tb testing.TB, kubeconfig string) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return kubernetes.NewForConfigOrDie(cfg)
}

func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
	}
}

// latencies records durations and reports percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, prefix string) {
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	if len(l.d) == 0 {
		return
	}
	at := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), prefix+"p50-ms")
	b.ReportMetric(at(0.99), prefix+"p99-ms")
}

func benchmarkCreate(b *testing.B, clients int) {
	c := startCluster(b)
	admin := protobufClient(b, c.kubeconfig)
	benchmarkCreateAs(b, []kubernetes.Interface{admin}, admin, clients)
}

// benchmarkCreateAs creates b.N pods in default from workers goroutines,
// each create through the next of clients in turn, and reports the
// latencies and the rate; admin takes the server's profiles when
// SKIFF_BENCH_CPUPROFILE or _ALLOCPROFILE name a file.
func benchmarkCreateAs(b *testing.B, clients []kubernetes.Interface, admin kubernetes.Interface, workers int) {
	if path := os.Getenv("SKIFF_BENCH_CPUPROFILE"); path != "" {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go profileServer(ctx, b, admin, path)
	}
	b.ResetTimer()
	lat, elapsed := createPods(b, clients, workers, b.N)
	b.StopTimer()
	if path := os.Getenv("SKIFF_BENCH_ALLOCPROFILE"); path != "" {
		saveProfile(context.Background(), b, admin, "/debug/pprof/allocs", "", path)
	}
	lat.report(b, "create-")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
}

// createPods creates n pods in default (names of their own each call)
// from workers goroutines, each create through the next of clients in
// turn: their latencies, and the time they took.
func createPods(tb testing.TB, clients []kubernetes.Interface, workers, n int) (*latencies, time.Duration) {
	var lat latencies
	var next int64
	var mu sync.Mutex
	run := time.Now().UnixNano()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= int64(n) {
					return
				}
				pods := clients[i%int64(len(clients))].CoreV1().Pods("default")
				t0 := time.Now()
				if _, err := pods.Create(context.Background(), benchPod(fmt.Sprintf("p-%x-%d", run, i)), metav1.CreateOptions{}); err != nil {
					tb.Error(err)
					return
				}
				lat.add(time.Since(t0))
			}
		}()
	}
	wg.Wait()
	return &lat, time.Since(start)
}

func BenchmarkPodCreate1Client(b *testing.B) { benchmarkCreate(b, 1) }

// BenchmarkPodCreateChain measures what authorization and admission cost
// on the create path: pods created by a user who is not in system:masters
// (a token user, bound to edit in default), against a server without
// either (AlwaysAllow, no admission plugins), with authorization only
// (Node,RBAC) and with the whole chain (the defaults).
func BenchmarkPodCreateChain(b *testing.B) {
	tokens := filepath.Join(b.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("bench-token,bench,uid-bench\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		flags []string
	}{
		{"without", []string{"--authorization-mode=AlwaysAllow", "--disable-admission-plugins=" + strings.Join(controlplane.AdmissionPlugins, ",")}},
		{"authorization", []string{"--disable-admission-plugins=" + strings.Join(controlplane.AdmissionPlugins, ",")}},
		{"with", nil},
	} {
		b.Run(v.name, func(b *testing.B) {
			c := startCluster(b, append(v.flags, "--token-auth-file", tokens)...)
			c.must("create", "rolebinding", "bench-edit", "--clusterrole=edit", "--user=bench")
			client := protobufClient(b, userKubeconfig(b, c.kubeconfig, "bench-token"))
			waitUntil(b, "the binding to count", func() bool {
				_, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{Limit: 1})
				return err == nil
			})
			benchmarkCreateAs(b, []kubernetes.Interface{client}, protobufClient(b, c.kubeconfig), 1)
		})
	}
}
func BenchmarkPodCreate16Clients(b *testing.B) { benchmarkCreate(b, 16) }

// BenchmarkWatchFanout measures how long one write takes to reach each of
// 100 watchers.
func BenchmarkWatchFanout(b *testing.B) {
	const watchers = 100
	c := startCluster(b)
	client := fastClient(b, c.kubeconfig)
	cms := client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fan"}, Data: map[string]string{"i": "0"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var ws []watch.Interface
	for range watchers {
		w, err := cms.Watch(context.Background(), metav1.ListOptions{ResourceVersion: cm.ResourceVersion, FieldSelector: "metadata.name=fan"})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cm.Data["i"] = strconv.Itoa(i + 1)
		t0 := time.Now()
		if cm, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-w.ResultChan():
					lat.add(time.Since(t0))
				case <-time.After(10 * time.Second):
					b.Error("a watcher missed an event")
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	lat.report(b, "fanout-")
}

// BenchmarkServerRSS10kPods stores 10,000 pods and reports the server
// process's resident memory, after the writes and after a full list.
func BenchmarkServerRSS10kPods(b *testing.B) {
	const total = 10000
	for range b.N {
		c := startCluster(b)
		client := fastClient(b, c.kubeconfig)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < total; i += 16 {
					if _, err := client.CoreV1().Pods("default").Create(context.Background(), benchPod(fmt.Sprintf("p-%05d", i)), metav1.CreateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(rssMB(b, c.cmd.Process.Pid), "rss-after-writes-MB")
		list, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != total {
			b.Fatalf("list: %v %d", err, len(list.Items))
		}
		b.ReportMetric(rssMB(b, c.cmd.Process.Pid), "rss-after-list-MB")
		c.stop()
	}
}

func rssMB(b *testing.B, pid int) float64 { return statusMB(b, pid, "VmRSS:") }

// statusMB reads one memory line (VmRSS:, RssAnon:, …) of /proc/<pid>/status in MB.
func statusMB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
