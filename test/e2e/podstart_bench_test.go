package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// BenchmarkPodStartSequential100 runs `skiff server` (with its in-process
// agent, as `skiff server` runs by default) and, from this process, creates
// 100 pods one after another (busybox `sleep 3600`, image present), each
// once the previous is Running and Ready. A pod's time is from just
// before its Create call to the watch event that shows it Ready. The
// server runs with --log-level debug so that the agent logs each pod's
// start step by step; the slowest pods' steps are logged.
func BenchmarkPodStartSequential100(b *testing.B) {
	n := startNodeCluster(b, "--log-level", "debug")
	for b.Loop() {
		took := startSequentially(b, n, 100)
		starts := agentStarts(n.log.String())
		for _, step := range []string{"queued", "sandbox", "network", "pause", "containers", "status", "total"} {
			b.ReportMetric(ms(median(starts, step)), "agent-"+step+"-p50-ms")
		}
		b.Logf("slowest pods' starts, as the agent logged them:\n%s", slowestStarts(starts, 5))
		reportStarts(b, took)
	}
}

// BenchmarkPodStartTracing is the cost of tracing every pod's journey:
// the 100 sequential pod starts of BenchmarkPodStartSequential100 on a
// server with its default flags (every pod traced), then on one with
// --tracing-sampling-rate 0 (none), each on a cluster of its own.
func BenchmarkPodStartTracing(b *testing.B) {
	for _, c := range []struct {
		name  string
		flags []string
	}{{"traced", nil}, {"untraced", []string{"--tracing-sampling-rate", "0"}}} {
		b.Run(c.name, func(b *testing.B) {
			n := startNodeCluster(b, c.flags...)
			for b.Loop() {
				reportStarts(b, startSequentially(b, n, 100))
			}
		})
	}
}

// startSequentially creates count pods on n one after another, each once
// the one before is Ready, and returns each one's time to Ready; it
// deletes them after.
func startSequentially(b *testing.B, n *nodeCluster, count int) []time.Duration {
	client := protobufClient(b, n.kubeconfig)
	w, err := client.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var took []time.Duration
	for i := range count {
		took = append(took, startOnePod(b, client.CoreV1().Pods("default"), w, fmt.Sprintf("seq-%03d", i)))
	}
	n.deletePods()
	return took
}

// reportStarts reports the p50, p99 and max of took.
func reportStarts(b *testing.B, took []time.Duration) {
	took = slices.Sorted(slices.Values(took))
	at := func(q float64) time.Duration { return took[int(q*float64(len(took)-1))] }
	b.ReportMetric(ms(at(0.5)), "p50-ms")
	b.ReportMetric(ms(at(0.99)), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// startOnePod creates pod name and waits on w until it is Ready.
func startOnePod(b *testing.B, pods podCreator, w watch.Interface, name string) time.Duration {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{Name: "sleep", Image: e2eImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sleep", "3600"}}},
	}}
	start := time.Now()
	if _, err := pods.Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == name && podReady(p) {
				return time.Since(start)
			}
		case <-timeout:
			b.Fatalf("pod %s not Ready within a minute", name)
		}
	}
}

type podCreator interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// agentStart is one "pod started" line of the agent's log: the line, and
// each step's duration by name.
type agentStart struct {
	line  string
	steps map[string]time.Duration
}

// agentStarts reads the agent's "pod started" lines from log.
func agentStarts(log string) []agentStart {
	var out []agentStart
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "pod started") {
			continue
		}
		st := agentStart{line: line, steps: map[string]time.Duration{}}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				if d, err := time.ParseDuration(v); err == nil {
					st.steps[k] = d
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// median is the median of one step over starts.
func median(starts []agentStart, step string) time.Duration {
	if len(starts) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(starts))
	for i, st := range starts {
		ds[i] = st.steps[step]
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// slowestStarts returns the lines of the n starts with the largest totals.
func slowestStarts(starts []agentStart, n int) string {
	starts = slices.Clone(starts)
	slices.SortFunc(starts, func(a, b agentStart) int { return int(b.steps["total"] - a.steps["total"]) })
	var lines []string
	for _, st := range starts[:min(n, len(starts))] {
		lines = append(lines, st.line)
	}
	return strings.Join(lines, "\n")
}
