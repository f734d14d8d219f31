package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/test/nodetest"
)

// e2eImage is the image the node tests run; it is imported from the
// agent's images directory at start (an air-gapped node).
const e2eImage = "skiff.test/busybox:1"

// nodeCluster is `skiff server` with its in-process agent, running real
// pods on this machine.
type nodeCluster struct {
	*cluster
	node     nodetest.Node
	nodeName string
	// agent and agentArgs are a separate agent process and its command
	// line (joinNode), for restartAgent.
	agent     *exec.Cmd
	agentArgs []string
	agentLog  *bytes.Buffer
}

func startNodeCluster(t testing.TB, extra ...string) *nodeCluster {
	t.Helper()
	dir, node, agentArgs := prepareNode(t)
	n := &nodeCluster{node: node, nodeName: agentArgs[1]}
	args := append(agentArgs, "--cluster-cidr", "10.252.0.0/16", "--node-monitor-grace-period", "40s")
	n.cluster = launch(t, dir, append(args, extra...)...)
	t.Cleanup(n.deletePods)
	n.waitNodeReady()
	return n
}

// prepareNode makes a data dir with the test image in the agent's images
// directory, registers the machine's cleanup, and returns the agent flags
// that keep this node's names apart from any other.
func prepareNode(t testing.TB) (string, nodetest.Node, []string) {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("e2e with an agent: needs root and containerd, runc, CNI plugins")
	}
	dir := t.TempDir()
	node := nodetest.New(dir)
	t.Cleanup(func() {
		node.Clean(t)
		nodetest.CleanServices(t)
	})
	tar, err := images.Busybox(e2eImage)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "agent", "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent", "images", "busybox.tar"), tar, 0o644); err != nil {
		t.Fatal(err)
	}
	name := "e2e" + strings.TrimPrefix(node.CgroupRoot, "/skiff-test")
	return dir, node, []string{"--node-name", name, "--node-ip", "127.0.0.1",
		"--cni-bridge", node.Bridge, "--netns-dir", node.NetNSDir, "--cgroup-root", node.CgroupRoot,
		"--pod-log-dir", filepath.Join(dir, "logs"), "--port", fmt.Sprint(servertest.FreePorts(t, 1)[0])}
}

func (n *nodeCluster) waitNodeReady() {
	waitUntil(n.t, "node Ready", func() bool {
		out, _, _ := n.kubectl("get", "node", n.nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return out == "True"
	})
}

// deletePods deletes every pod gracefully; the agent stops and removes them.
func (n *nodeCluster) deletePods() {
	if n.cmd == nil {
		return
	}
	_, _, _ = n.kubectl("delete", "deployments,replicasets,pods", "--all", "--all-namespaces", "--wait=true", "--timeout=60s")
}

func (n *nodeCluster) podField(name, jsonpath string) string {
	out, _, _ := n.kubectl("get", "pod", name, "-o", "jsonpath="+jsonpath)
	return out
}

func TestKubectlRunOnANode(t *testing.T) {
	n := startNodeCluster(t)
	// Watch from before the pod exists, as a user would. kubectl watches from
	// the resourceVersion of its first list; a pod that never schedules
	// makes that list print, so the test knows when it happened.
	n.must("run", "marker", "--image="+e2eImage, "--overrides", `{"spec":{"nodeSelector":{"no-such-label":"x"}}}`)
	ctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	var watched syncBuffer
	watch := exec.CommandContext(ctx, kubectlBin, "--kubeconfig", n.kubeconfig, "get", "pods", "-w")
	watch.Stdout = &watched
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the watch to list", func() bool { return strings.Contains(watched.String(), "marker") })
	n.must("run", "web", "--image="+e2eImage, "--image-pull-policy=Never", "--command", "--", "httpd", "-f", "-p", "8080")
	waitUntil(t, "web Running", func() bool { return n.podField("web", "{.status.phase}") == "Running" })
	waitUntil(t, "watch shows Running", func() bool { return strings.Contains(watched.String(), "Running") })
	stopWatch()
	_ = watch.Wait()
	assertInOrder(t, afterLine(watched.String(), "marker"), "web", "Pending", "web", "ContainerCreating", "web", "Running")

	describe := n.must("describe", "pod", "web")
	for _, want := range []string{"Scheduled", "Pulled", "Created", "Started", "Successfully assigned default/web to " + n.nodeName} {
		if !strings.Contains(describe, want) {
			t.Errorf("describe pod lacks %q:\n%s", want, describe)
		}
	}
	if ready := n.must("get", "pod", "web", "--no-headers"); !strings.Contains(ready, "1/1") || !strings.Contains(ready, "Running") {
		t.Errorf("get pod: %s", ready)
	}
}

// afterLine is text after the first line containing word.
func afterLine(text, word string) string {
	i := strings.Index(text, word)
	if i < 0 {
		return ""
	}
	_, rest, _ := strings.Cut(text[i:], "\n")
	return rest
}

func assertInOrder(t *testing.T, text string, words ...string) {
	t.Helper()
	at := 0
	for _, w := range words {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Errorf("%q not seen after position %d in:\n%s", w, at, text)
			return
		}
		at += i + len(w)
	}
}

const replicaSet = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: sleepers
spec:
  replicas: 3
  selector:
    matchLabels: {app: sleepers}
  template:
    metadata:
      labels: {app: sleepers}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: sleep
        image: skiff.test/busybox:1
        imagePullPolicy: Never
        command: ["sleep", "3600"]
`

func TestReplicaSetOnANodeAndServerKill(t *testing.T) {
	n := startNodeCluster(t)
	if _, errOut, err := n.kubectlIn(replicaSet, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v %s", err, errOut)
	}
	running := func(want int) func() bool {
		return func() bool {
			out, _, _ := n.kubectl("get", "pods", "-l", "app=sleepers", "--field-selector=status.phase=Running", "-o", "name")
			return len(strings.Fields(out)) == want
		}
	}
	waitUntil(t, "3 pods running", running(3))
	if got := n.sandboxes(t); got != 3 {
		t.Errorf("%d sandboxes for 3 pods", got)
	}
	ids := n.must("get", "pods", "-l", "app=sleepers", "-o", "jsonpath={.items[*].status.containerStatuses[*].containerID}")

	// kill -9 the server with its in-process agent: the pods keep running,
	// and the restarted agent adopts them without creating anything twice.
	n.kill9()
	n.start()
	waitUntil(t, "3 pods running after restart", running(3))
	time.Sleep(3 * time.Second)
	if after := n.must("get", "pods", "-l", "app=sleepers", "-o", "jsonpath={.items[*].status.containerStatuses[*].containerID}"); after != ids {
		t.Errorf("containers changed across a server kill: %s → %s", ids, after)
	}
	if restarts := n.must("get", "pods", "-l", "app=sleepers", "-o", "jsonpath={.items[*].status.containerStatuses[*].restartCount}"); restarts != "0 0 0" {
		t.Errorf("restart counts %q", restarts)
	}
	if got := n.sandboxes(t); got != 3 {
		t.Errorf("%d sandboxes after the restart", got)
	}

	n.must("scale", "rs", "sleepers", "--replicas=1")
	waitUntil(t, "1 pod left", func() bool {
		out, _, _ := n.kubectl("get", "pods", "-l", "app=sleepers", "-o", "name")
		return len(strings.Fields(out)) == 1
	})
	waitUntil(t, "extra sandboxes removed", func() bool { return n.sandboxes(t) == 1 })
}

// syncBuffer is a bytes.Buffer safe to write from a process while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sandboxes counts the pods' network namespaces on the node, one per sandbox.
func (n *nodeCluster) sandboxes(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("ls", n.node.NetNSDir).Output()
	if err != nil {
		return -1
	}
	return len(strings.Fields(string(out)))
}
