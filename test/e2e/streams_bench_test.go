package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// benchStreamsPod writes a 100 MiB log (102400 lines of 1 KiB, newline
// included) and serves a 100 MiB file on 8080.
const benchStreamsPod = `apiVersion: v1
kind: Pod
metadata: {name: bench}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: writer
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "yes $(head -c 1023 /dev/zero | tr '\\0' x) | head -n 102400; echo done; sleep 3600"]
  - name: web
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "mkdir -p /www && head -c 104857600 /dev/zero > /www/big && exec httpd -f -p 8080 -h /www"]
`

const benchMiB = 100

// BenchmarkKubectlStreams measures, through kubectl, the API server and the
// node API on one machine: `kubectl logs` of a 100 MiB log (MB/s), `kubectl
// exec -- true` round trips (p50/p99, kubectl's own start-up included), and
// a 100 MiB download through `kubectl port-forward` (MB/s). Results are in
// docs/perf.md.
func BenchmarkKubectlStreams(b *testing.B) {
	n := startNodeCluster(b, "--container-log-max-size=1Gi")
	n.mustIn(benchStreamsPod, "apply", "-f", "-")
	n.must("wait", "--for=condition=Ready", "pod/bench", "--timeout=90s")
	waitUntilFor(b, "the 100 MiB log written", 5*time.Minute, func() bool {
		out, _, _ := n.kubectl("logs", "bench", "-c", "writer", "--tail=1")
		return out == "done\n"
	})
	for b.Loop() {
		b.ReportMetric(n.logsThroughput(b), "logs-MB/s")
		p50, p99 := n.execLatency(b, 50)
		b.ReportMetric(p50, "exec-p50-ms")
		b.ReportMetric(p99, "exec-p99-ms")
		b.ReportMetric(n.portForwardThroughput(b), "port-forward-MB/s")
	}
}

// logsThroughput times `kubectl logs` of the whole log to a pipe.
func (n *nodeCluster) logsThroughput(b *testing.B) float64 {
	cmd := n.kubectlCmd(context.Background(), nil, "logs", "bench", "-c", "writer")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	read, _ := io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	if read < benchMiB<<20 {
		b.Fatalf("logs gave %d bytes, want the whole %d MiB", read, benchMiB)
	}
	return float64(read) / 1e6 / time.Since(start).Seconds()
}

// execLatency runs `kubectl exec -- true` runs times and returns the p50
// and p99 in milliseconds.
func (n *nodeCluster) execLatency(b *testing.B, runs int) (p50, p99 float64) {
	var took []time.Duration
	for range runs {
		start := time.Now()
		n.must("exec", "bench", "-c", "writer", "--", "true")
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	at := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
	return at(0.5), at(0.99)
}

// portForwardThroughput downloads the 100 MiB file through kubectl
// port-forward.
func (n *nodeCluster) portForwardThroughput(b *testing.B) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := servertest.FreePorts(b, 1)[0]
	out, cmd := n.kubectlStart(ctx, nil, "port-forward", "pod/bench", fmt.Sprintf("%d:8080", port))
	defer func() { cancel(); _ = cmd.Wait() }()
	waitUntilFor(b, "port-forward listening", 20*time.Second, func() bool {
		return strings.Contains(out.String(), "Forwarding from")
	})
	start := time.Now()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/big", port))
	if err != nil {
		b.Fatal(err)
	}
	read, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || read != benchMiB<<20 {
		b.Fatalf("downloaded %d bytes (%v), want %d MiB", read, err, benchMiB)
	}
	return float64(read) / 1e6 / time.Since(start).Seconds()
}
