package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const crictlPod = `apiVersion: v1
kind: Pod
metadata: {name: crictl-demo}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello from app; mkdir /www; echo page > /www/index.html; exec httpd -f -p 8080 -h /www"]
`

// TestOperateNode: a node as an operator looks at it, on one cluster
// started with the flags operators reach for from k3s.
func TestOperateNode(t *testing.T) {
	n := startNodeCluster(t, "--write-kubeconfig-mode", "0640", "--node-external-ip", "192.0.2.10", "--max-pods", "50")
	t.Run("crictl", func(t *testing.T) { testCrictl(t, n) })
	t.Run("flags", func(t *testing.T) { testNodeFlags(t, n) })
	t.Run("metrics", func(t *testing.T) { testMetrics(t, n) })
	t.Run("explain", func(t *testing.T) { testExplainPod(t, n) })
	t.Run("explain workloads", func(t *testing.T) { testExplainWorkload(t, n) })
	t.Run("page", func(t *testing.T) { testPage(t, n) })
	t.Run("one log stream", func(t *testing.T) { testOneLogStream(t, n.log.String()) })
}

// testOneLogStream: every line the server (with its agent, etcd, the
// Kubernetes libraries and containerd's client) wrote is in one format,
// slog's text, with its component.
func testOneLogStream(t *testing.T, log string) {
	line := regexp.MustCompile(`^time=\S+ level=\S+ msg=.* component=\S+`)
	bad := 0
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if !line.MatchString(l) && bad < 5 {
			t.Errorf("a log line in another format: %q", l)
			bad++
		}
	}
}

// testCrictl: the unmodified crictl, through `skiff crictl` and the
// agent's CRI socket, sees the pod kubectl created and its container; logs,
// inspect, exec, port-forward, images and stats work; what the agent owns
// is refused; `skiff ctr` sees the same container in containerd.
func testCrictl(t *testing.T, n *nodeCluster) {
	n.mustIn(crictlPod, "apply", "-f", "-")
	n.must("wait", "--for=condition=Ready", "pod/crictl-demo", "--timeout=90s")
	tool := func(name string, args ...string) (string, error) {
		out, err := exec.Command(skiffBin, append([]string{name, "--data-dir", n.dataDir}, args...)...).CombinedOutput()
		return string(out), err
	}
	must := func(name string, args ...string) string {
		t.Helper()
		out, err := tool(name, args...)
		if err != nil {
			t.Fatalf("skiff %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(out)
	}
	sandbox := must("crictl", "pods", "--name", "^crictl-demo$", "--namespace", "default", "-q")
	if strings.Count(sandbox, "\n") != 0 || len(sandbox) != 64 {
		t.Fatalf("crictl pods: %q, want one sandbox ID", sandbox)
	}
	id := must("crictl", "ps", "--pod", sandbox[:12], "--name", "app", "-q")
	var inspect struct {
		Status struct {
			State   string `json:"state"`
			LogPath string `json:"logPath"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(must("crictl", "inspect", id[:12])), &inspect); err != nil ||
		inspect.Status.State != "CONTAINER_RUNNING" || inspect.Status.LogPath == "" {
		t.Errorf("crictl inspect: %+v %v", inspect, err)
	}
	if out := must("crictl", "logs", id); out != "hello from app" {
		t.Errorf("crictl logs: %q", out)
	}
	if out := must("crictl", "exec", id, "hostname"); out != "crictl-demo" {
		t.Errorf("crictl exec: %q", out)
	}
	if out := must("crictl", "images"); !strings.Contains(out, "skiff.test/busybox") {
		t.Errorf("crictl images:\n%s", out)
	}
	if out := must("crictl", "stats", "--id", id); !strings.Contains(out, id[:13]) {
		t.Errorf("crictl stats:\n%s", out)
	}
	testCrictlPortForward(t, n.dataDir, sandbox)
	if out, err := tool("crictl", "stopp", sandbox); err == nil || !strings.Contains(out, "kubectl") {
		t.Errorf("crictl stopp: %v\n%s, want a refusal naming kubectl", err, out)
	}
	if out := must("ctr", "containers", "ls", "-q"); !strings.Contains(out, id) {
		t.Errorf("skiff ctr containers ls:\n%s", out)
	}
}

// testCrictlPortForward: `crictl port-forward` to the pod's port 8080
// serves its page on a port of 127.0.0.1.
func testCrictlPortForward(t *testing.T, dataDir, sandbox string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var out syncBuffer
	cmd := exec.Command(skiffBin, "crictl", "--data-dir", dataDir, "port-forward", sandbox, fmt.Sprintf("%d:8080", port))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var page string
	until(t, "the page through crictl port-forward", 20*time.Second, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
		return true
	})
	if page != "page\n" {
		t.Errorf("crictl port-forward served %q\n%s", page, out.String())
	}
}

// testNodeFlags: --write-kubeconfig-mode, --node-external-ip
// (EXTERNAL-IP in kubectl's wide listing) and --max-pods (the Node's pod
// capacity) reach the node.
func testNodeFlags(t *testing.T, n *nodeCluster) {
	if fi, err := os.Stat(n.kubeconfig); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("admin kubeconfig: %v %v, want mode 0640", fi.Mode(), err)
	}
	wide := n.must("get", "node", n.nodeName, "-o", "wide")
	if !regexp.MustCompile(`\s192\.0\.2\.10\s`).MatchString(wide) {
		t.Errorf("kubectl get node -o wide, want EXTERNAL-IP 192.0.2.10:\n%s", wide)
	}
	waitUntil(t, "pod capacity 50", func() bool {
		out, _, err := n.kubectl("get", "node", n.nodeName, "-o", "jsonpath={.status.capacity.pods}")
		return err == nil && out == "50"
	})
}
