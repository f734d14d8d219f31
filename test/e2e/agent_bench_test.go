package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/pki"
)

// BenchmarkAgent100Pods runs `skiff server --disable-agent` and a separate
// `skiff agent` process, starts a ReplicaSet of 100 pods on that node, and
// reports the time until all run and the agent process's resident memory
// with them running (the agent alone: the control plane is another process):
// all of it, and the anonymous part (heap, stacks), which leaves out the
// pages of the 110 MB binary that the process has touched.
func BenchmarkAgent100Pods(b *testing.B) {
	agent, client := startAgentNode(b)
	for b.Loop() {
		start := time.Now()
		rs := hundredSleepers()
		if _, err := client.AppsV1().ReplicaSets("default").Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitUntilFor(b, "100 pods running", 5*time.Minute, func() bool {
			l, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=Running"})
			return err == nil && len(l.Items) == 100
		})
		b.ReportMetric(time.Since(start).Seconds(), "s-to-100-running")
		logReadyTimeline(b, client, start)
		time.Sleep(15 * time.Second) // a relist and some status traffic with all pods up
		b.ReportMetric(rssMB(b, agent.Process.Pid), "agent-rss-MB")
		b.ReportMetric(statusMB(b, agent.Process.Pid, "RssAnon:"), "agent-anon-MB")
	}
}

// logReadyTimeline logs how many pods were created and became Ready in each
// second after start: a steady rate means the node's throughput is the limit.
func logReadyTimeline(b *testing.B, client kubernetes.Interface, start time.Time) {
	l, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	second := func(t metav1.Time) int { return int(t.Sub(start.Truncate(time.Second)).Seconds()) }
	created, ready := map[int]int{}, map[int]int{}
	for _, p := range l.Items {
		created[second(p.CreationTimestamp)]++
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready[second(c.LastTransitionTime)]++
			}
		}
	}
	b.Logf("pods created per second: %v; Ready per second: %v", created, ready)
}

// startAgentNode runs `skiff server --disable-agent` and a `skiff agent`
// process beside it, and returns the agent's process and an unthrottled
// client once the node is Ready. Pods are deleted when the benchmark ends.
func startAgentNode(b *testing.B) (*exec.Cmd, kubernetes.Interface) {
	n, agent := startSeparateNode(b)
	return agent, fastClient(b, n.kubeconfig)
}

// startSeparateNode runs `skiff server --disable-agent` and a `skiff agent`
// process beside it (with a node API certificate from the cluster CA), and
// returns them once the node is Ready. Pods are deleted when the test ends.
func startSeparateNode(t testing.TB) (*nodeCluster, *exec.Cmd) {
	dir, node, agentArgs := prepareNode(t)
	n := &nodeCluster{node: node, nodeName: agentArgs[1]}
	n.cluster = launch(t, dir, "--disable-agent", "--cluster-cidr", "10.252.0.0/16", "--node-monitor-grace-period", "40s")
	agent := n.startAgent(dir, agentArgs)
	t.Cleanup(n.deletePods)
	n.waitNodeReady()
	return n, agent
}

func hundredSleepers() *appsv1.ReplicaSet {
	labels := map[string]string{"app": "hundred"}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "hundred"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](100),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{
					Name: "sleep", Image: e2eImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				}}},
			},
		},
	}
}

// startAgent runs `skiff agent` for the cluster; it is stopped (SIGTERM)
// when the test ends, after the pods are deleted and before the server stops.
func (n *nodeCluster) startAgent(dir string, agentArgs []string) *exec.Cmd {
	args := append([]string{"agent", "--kubeconfig", n.kubeconfig, "--data-dir", dir}, agentArgs...)
	return n.runAgent(append(args, n.nodeServingCert(dir)...))
}

// startJoinedNode runs `skiff server` without its agent and a `skiff
// agent` that joins it as a new machine would: given only the server's
// URL and its join token, it gets its certificates through the CSR API.
func startJoinedNode(t testing.TB, serverArgs ...string) *nodeCluster {
	return joinNode(t, false, serverArgs...)
}

// joinNode is startJoinedNode; with serverDown the server is stopped
// before the agent starts and started again once the agent has been
// trying to join for a while.
func joinNode(t testing.TB, serverDown bool, serverArgs ...string) *nodeCluster {
	dir, node, agentArgs := prepareNode(t)
	n := &nodeCluster{node: node, nodeName: agentArgs[1]}
	n.cluster = launch(t, dir, append([]string{"--disable-agent", "--cluster-cidr", "10.252.0.0/16", "--node-monitor-grace-period", "40s"}, serverArgs...)...)
	token, err := os.ReadFile(filepath.Join(dir, "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if serverDown {
		n.stop()
	}
	n.agentArgs = append([]string{"agent", "--server", rc.Host, "--token", strings.TrimSpace(string(token)),
		"--kubeconfig", filepath.Join(dir, "agent.kubeconfig"), "--data-dir", dir}, agentArgs...)
	n.agent, n.agentLog = startAgent(t, n.agentArgs)
	// Stopped after the pods are deleted: the agent running then, which
	// restartAgent may have replaced.
	t.Cleanup(func() { stopAgent(t, n.agent, n.agentLog) })
	if serverDown {
		time.Sleep(8 * time.Second)
		if err := n.agent.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("the agent did not wait for its server: %v", err)
		}
		n.start()
	}
	t.Cleanup(n.deletePods)
	n.waitNodeReady()
	return n
}

// runAgent runs skiff with args (an agent), stopped (SIGTERM) when the
// test ends, after the pods are deleted and before the server stops.
func (n *nodeCluster) runAgent(args []string) *exec.Cmd {
	cmd, log := startAgent(n.t, args)
	n.t.Cleanup(func() { stopAgent(n.t, cmd, log) })
	return cmd
}

func startAgent(t testing.TB, args []string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(skiffBin, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &log
}

func stopAgent(t testing.TB, cmd *exec.Cmd, log *bytes.Buffer) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Logf("agent (pid %s) exited: %v\n%s", strconv.Itoa(cmd.Process.Pid), err, log.String())
	}
}

// restartAgent kills the separate agent (SIGKILL: nothing is handed over)
// and starts it again with the same command line.
func (n *nodeCluster) restartAgent() {
	_ = n.agent.Process.Kill()
	_ = n.agent.Wait()
	n.agent, n.agentLog = startAgent(n.t, n.agentArgs)
}

// nodeServingCert issues the node API's serving certificate with the
// cluster's CA, as an operator does for a node that is not the server's
// own, and returns the agent flags that name it.
func (n *nodeCluster) nodeServingCert(dir string) []string {
	ca, err := pki.LoadOrCreateCA(filepath.Join(n.dataDir, "server", "tls"), "skiff-ca")
	if err != nil {
		n.t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("system:node:"+n.nodeName, nil, []string{n.nodeName, "127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		n.t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "node-api.crt"), filepath.Join(dir, "node-api.key")
	if err := errors.Join(os.WriteFile(certPath, certPEM, 0o644), os.WriteFile(keyPath, keyPEM, 0o600)); err != nil {
		n.t.Fatal(err)
	}
	return []string{"--tls-cert-file", certPath, "--tls-private-key-file", keyPath}
}
