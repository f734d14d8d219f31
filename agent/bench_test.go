package agent

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// Pod start-up on one real node: the control plane (embedded etcd, API
// server, scheduler, controllers) and the agent with its own containerd all
// run in this process, on this machine. Pods are created without
// spec.nodeName, so each start includes scheduling and binding. cri's
// BenchmarkFloor does the same runtime and network steps with none of the
// control plane or agent. Results are in docs/perf.md.

const (
	benchNamespace = "default"
	rsReplicas     = 100
	podTimeout     = 2 * time.Minute  // one pod, the first one included
	rsTimeout      = 10 * time.Minute // rsReplicas pods
)

// BenchmarkPodStartup creates pods one after another, each once the one
// before is Running, and reports the time from just before each Create call
// to the watch event showing the pod Running and Ready. A first pod, not
// measured, waits for the node to be ready and creates the CNI bridge.
// Run with -benchtime Nx for N pods.
func BenchmarkPodStartup(b *testing.B) {
	n := startTestNode(b)
	pods := n.client.CoreV1().Pods(benchNamespace)
	w, err := pods.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	startPod := func(name string) {
		if _, err := pods.Create(context.Background(), sleepPod(name), metav1.CreateOptions{}); err != nil {
			b.Fatalf("create pod %s: %v", name, err)
		}
		awaitReady(b, w, podTimeout, func(ready map[string]bool) bool { return ready[name] })
	}
	startPod("warm-up")

	var latencies []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		startPod(fmt.Sprintf("pod-%d", i))
		latencies = append(latencies, time.Since(start))
	}

	slices.Sort(latencies)
	at := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n.deleteAllPods(ctx)
}

// BenchmarkReplicaSet100 creates a ReplicaSet of rsReplicas pods and reports
// the time until all of them are Running and Ready. With the pods running it
// reports this process's resident memory and Go heap in use (no forced GC):
// the agent's, but also the API server's, etcd's, the controllers' and the
// benchmark's own, which share the process.
func BenchmarkReplicaSet100(b *testing.B) {
	n := startTestNode(b)
	sets := n.client.AppsV1().ReplicaSets(benchNamespace)
	rs := benchReplicaSet(rsReplicas)
	selector := metav1.FormatLabelSelector(rs.Spec.Selector)
	var elapsed time.Duration
	var rssMB, heapMB float64
	for b.Loop() {
		w, err := n.client.CoreV1().Pods(benchNamespace).Watch(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := sets.Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create replicaset: %v", err)
		}
		awaitReady(b, w, rsTimeout, func(ready map[string]bool) bool { return len(ready) == rsReplicas })
		elapsed += time.Since(start)
		b.StopTimer()
		w.Stop()
		rssMB, heapMB = processRSSMB(b), heapInuseMB()
		n.deleteReplicaSet(rs.Name, selector)
		b.StartTimer()
	}
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s-to-100-running")
	b.ReportMetric(rssMB, "process-rss-MB")
	b.ReportMetric(heapMB, "heap-MB")
}

// sleepPod runs busybox's sleep, with the image already on the node. A
// short grace period: sleep, as PID 1, ignores SIGTERM.
func sleepPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			Containers:                    []v1.Container{busybox("sleep", "sleep", "3600")},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
}

func benchReplicaSet(replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": "bench-rs"}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-rs"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: sleepPod("").Spec},
		},
	}
}

// awaitReady reads pod events from w until done holds for the set of pods
// whose latest event shows them Running and Ready, or fails b after timeout.
func awaitReady(b *testing.B, w watch.Interface, timeout time.Duration, done func(ready map[string]bool) bool) {
	b.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	ready := map[string]bool{}
	for !done(ready) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("pod watch ended")
			}
			if ev.Type == watch.Error {
				b.Fatalf("pod watch: %v", apierrors.FromObject(ev.Object))
			}
			if p, ok := ev.Object.(*v1.Pod); ok {
				if ev.Type != watch.Deleted && running(p) {
					ready[p.Name] = true
				} else {
					delete(ready, p.Name)
				}
			}
		case <-timer.C:
			b.Fatalf("pods not running within %s: %d ready", timeout, len(ready))
		}
	}
}

// deleteReplicaSet deletes the ReplicaSet and waits until its pods are gone.
func (n *testNode) deleteReplicaSet(name, selector string) {
	background := metav1.DeletePropagationBackground
	err := n.client.AppsV1().ReplicaSets(benchNamespace).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil {
		n.t.Fatalf("delete replicaset: %v", err)
	}
	servertest.Eventually(n.t, "replicaset's pods gone", 5*time.Minute, func(ctx context.Context) (bool, string) {
		l, err := n.client.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods", len(l.Items))
	})
}

// processRSSMB is this process's resident set size (VmRSS) in MB.
func processRSSMB(b *testing.B) float64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kB float64
			if _, err := fmt.Sscanf(v, "%f kB", &kB); err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kB / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func heapInuseMB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}
