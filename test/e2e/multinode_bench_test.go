package e2e

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/test/labtest"
	"github.com/vishvananda/netns"
)

// BenchmarkJoin measures joining: from starting `skiff agent --server
// --token` (a fresh node: its own containerd, a bootstrap CSR, its client
// certificate, registration) to its Node Ready, against one `skiff
// server`, a new node per iteration. Results are in docs/perf.md.
func BenchmarkJoin(b *testing.B) {
	dir, _, _ := prepareNode(b)
	c := launch(b, dir, "--disable-agent", "--cluster-cidr", "10.252.0.0/16")
	token, err := os.ReadFile(filepath.Join(dir, "server", "token"))
	if err != nil {
		b.Fatal(err)
	}
	client := c.client()
	var took []time.Duration
	for b.Loop() {
		agentDir, node, args := prepareNode(b)
		n := &nodeCluster{cluster: c, node: node, nodeName: args[1]}
		start := time.Now()
		n.runAgent(append([]string{"agent", "--server", c.server(), "--token", strings.TrimSpace(string(token)),
			"--kubeconfig", filepath.Join(agentDir, "agent.kubeconfig"), "--data-dir", agentDir}, args...))
		waitNodeReady(b, client, n.nodeName)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "s/join-median")
	b.ReportMetric(took[len(took)-1].Seconds(), "s/join-max")
}

// waitNodeReady polls (every 10 ms, for up to a minute) until node is
// Ready.
func waitNodeReady(tb testing.TB, client kubernetes.Interface, node string) {
	waitUntilEvery(tb, node+" Ready", 10*time.Millisecond, func() bool {
		n, err := client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
	})
}

// BenchmarkLabUp3 measures `test/vm/lab.sh up 3` (a server and three
// agents joined with its token, each in its network namespace) until it
// returns with every node Ready; the lab is taken down between iterations.
func BenchmarkLabUp3(b *testing.B) {
	l := newLab(b, labtest.Config{Agents: 3})
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if out, err := l.Script("up", "3"); err != nil {
			b.Fatalf("lab.sh up 3: %v\n%s", err, out)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		l.Down(b)
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "s/up-median")
	b.ReportMetric(took[len(took)-1].Seconds(), "s/up-max")
}

// podTransfer is what BenchmarkPodToPod sends per connection.
const podTransfer = 512 << 20

// BenchmarkPodToPod measures TCP throughput between pods, from a pod on
// lab-server to one on the same node and to one on lab-node1 (host-gw),
// podTransfer bytes per connection: the sender and the receivers are the
// benchmark process inside the pods' network namespaces, so the bytes
// take the pods' path (veth, bridge, routes, the lab's switch) and not
// kubectl's. For scale, the same between the two nodes' own namespaces
// (the lab's wire alone: no pod network).
func BenchmarkPodToPod(b *testing.B) {
	l := startLab(b, labtest.Config{Agents: 1})
	l.mustIn(labDeployment("a", 2, "\n      nodeSelector: {kubernetes.io/hostname: lab-server}")+"\n---\n"+
		labDeployment("b", 1, "\n      nodeSelector: {kubernetes.io/hostname: lab-node1}"), "apply", "-f", "-")
	var local, remote []labPod
	waitUntilFor(b, "three pods", 2*time.Minute, func() bool {
		local, remote = l.readyPods("app=a"), l.readyPods("app=b")
		return len(local) == 2 && len(remote) == 1
	})
	from := l.podNetNS(b, local[0])
	same := receiver(b, l.podNetNS(b, local[1]), local[1].ip)
	other := receiver(b, l.podNetNS(b, remote[0]), remote[0].ip)
	wire := receiver(b, nodeNetNS(b, "lab-node1"), l.IP("lab-node1"))
	server := nodeNetNS(b, "lab-server")
	var sameMBs, otherMBs, wireMBs float64
	for b.Loop() {
		sameMBs += sendFrom(b, from, same)
		otherMBs += sendFrom(b, from, other)
		wireMBs += sendFrom(b, server, wire)
	}
	n := float64(b.N)
	b.ReportMetric(sameMBs/n, "same-node-MB/s")
	b.ReportMetric(otherMBs/n, "cross-node-MB/s")
	b.ReportMetric(wireMBs/n, "node-to-node-MB/s")
	b.ReportMetric(100*otherMBs/sameMBs, "cross/same-%")
}

// nodeNetNS is a lab node's network namespace, closed at tb's cleanup.
func nodeNetNS(tb testing.TB, node string) netns.NsHandle {
	h, err := netns.GetFromName(node)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}

// receiver listens on ip:9000 in namespace h and discards what every
// connection sends; it returns the address to send to.
func receiver(tb testing.TB, h netns.NsHandle, ip string) string {
	var ln net.Listener
	inPod(tb, h, func() {
		var err error
		if ln, err = net.Listen("tcp", ip+":9000"); err != nil {
			tb.Fatal(err)
		}
	})
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// podNetNS is the network namespace of a pod in the lab.
func (l *lab) podNetNS(tb testing.TB, pod labPod) netns.NsHandle {
	return netNSWith(tb, filepath.Join(l.Dir, pod.node, "netns"), pod.ip, pod.name)
}

// sendFrom sends podTransfer bytes from namespace h to addr and returns
// the throughput in MB/s.
func sendFrom(tb testing.TB, h netns.NsHandle, addr string) float64 {
	var c net.Conn
	inPod(tb, h, func() {
		var err error
		if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
			tb.Fatal(err)
		}
	})
	defer c.Close()
	buf := make([]byte, 256<<10)
	start := time.Now()
	for sent := 0; sent < podTransfer; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			tb.Fatalf("send to %s: %v", addr, err)
		}
	}
	return float64(podTransfer) / 1e6 / time.Since(start).Seconds()
}
