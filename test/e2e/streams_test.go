package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/retry"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// streamsPod has a container that logs a line every 0.3 s after two
// fixed ones, one that serves a page on 8080, and one that writes 4000
// numbered lines quickly once /tmp/go exists.
const streamsPod = `apiVersion: v1
kind: Pod
metadata:
  name: streams
  labels: {app: streams}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: talker
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "echo first; echo second; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.3; done"]
  - name: web
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "echo serving; mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080}]
  - name: burst
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "until [ -e /tmp/go ]; do sleep 0.1; done; i=0; while [ $i -lt 4000 ]; do echo \"line $i\"; i=$((i+1)); [ $((i % 100)) -eq 0 ] && sleep 0.1; done; sleep 3600"]
`

// TestKubectlStreams: kubectl logs, exec, port-forward and cp against a
// running pod, through the API server to the node API, over kubectl's
// default WebSocket protocols and over SPDY.
func TestKubectlStreams(t *testing.T) {
	n := startNodeCluster(t, "--container-log-max-size=64Ki", "--container-log-max-files=3")
	n.mustIn(streamsPod, "apply", "-f", "-")
	n.must("wait", "--for=condition=Ready", "pod/streams", "--timeout=90s")
	t.Run("logs", n.testLogs)
	t.Run("logs -f", n.testLogsFollow)
	t.Run("logs -f across rotations", n.testLogsFollowRotation)
	t.Run("logs --previous", n.testLogsPrevious)
	t.Run("logs of a waiting container", n.testLogsWaiting)
	n.mustIn(`apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: streams}
  ports: [{port: 80, targetPort: 8080}]
`, "apply", "-f", "-")
	for _, proto := range []struct {
		name, execEnv, forwardEnv string
		spdy                      bool
	}{
		{"websocket", "", "", false},
		{"spdy", "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false", true},
	} {
		t.Run("exec "+proto.name, func(t *testing.T) { n.testExec(t, proto.execEnv) })
		t.Run("exec tty "+proto.name, func(t *testing.T) { n.testExecTTY(t, proto.spdy) })
		t.Run("attach "+proto.name, func(t *testing.T) { n.testAttach(t, proto.execEnv) })
		t.Run("port-forward pod "+proto.name, func(t *testing.T) { n.testPortForward(t, proto.forwardEnv, "pod/streams", 8080) })
		t.Run("port-forward svc "+proto.name, func(t *testing.T) { n.testPortForward(t, proto.forwardEnv, "svc/web", 80) })
	}
	t.Run("cp", n.testCopy)
	t.Run("run -i --rm", n.testRunInteractive)
	t.Run("run -it --rm", n.testRunTerminal)
	t.Run("bad input", n.testStreamErrors)
	t.Run("top", n.testTop)
	t.Run("nodes/proxy", n.testNodeProxy)
	t.Run("debug", n.testDebug)
}

// testDebug adds an ephemeral container with kubectl debug (the
// pods/ephemeralcontainers subresource): it runs beside the others, takes
// exec and logs, and stays listed, never restarted.
func (n *nodeCluster) testDebug(t *testing.T) {
	n.must("debug", "streams", "--image="+e2eImage, "--image-pull-policy=Never", "-c", "debugger", "--",
		"sh", "-c", "echo polo; exec sleep 3600")
	waitUntil(t, "the ephemeral container running", func() bool {
		return n.podField("streams", `{.status.ephemeralContainerStatuses[?(@.name=="debugger")].state.running}`) != ""
	})
	if out := n.must("exec", "streams", "-c", "debugger", "--", "echo", "marco"); out != "marco\n" {
		t.Errorf("exec in the ephemeral container: %q", out)
	}
	waitUntil(t, "its log", func() bool {
		out, _, _ := n.kubectl("logs", "streams", "-c", "debugger")
		return out == "polo\n"
	})
	if gen := n.podField("streams", "{.metadata.generation}"); gen != "2" {
		t.Errorf("generation %s after adding an ephemeral container, want 2", gen)
	}
	_, errOut, err := n.kubectlIn(`{"spec":{"ephemeralContainers":[]}}`, "patch", "pod", "streams", "--subresource=ephemeralcontainers", "--type=merge", "--patch-file=/dev/stdin")
	if err == nil || !strings.Contains(errOut, "may not be changed or removed") {
		t.Errorf("removing an ephemeral container: %v %s", err, errOut)
	}
}

func (n *nodeCluster) testLogs(t *testing.T) {
	waitUntil(t, "a few ticks", func() bool {
		out, _, _ := n.kubectl("logs", "streams", "-c", "talker")
		return strings.Contains(out, "tick 2")
	})
	out := n.must("logs", "streams", "-c", "talker")
	if !strings.HasPrefix(out, "first\nsecond\ntick 0\n") {
		t.Errorf("logs start %q, want first, second, tick 0", head(out))
	}
	if out := n.must("logs", "streams", "-c", "talker", "--tail=1"); !regexp.MustCompile(`^tick \d+\n$`).MatchString(out) {
		t.Errorf("--tail=1: %q, want one tick line", out)
	}
	if out := n.must("logs", "streams", "-c", "talker", "--limit-bytes=8"); out != "first\nse" {
		t.Errorf("--limit-bytes=8: %q", out)
	}
	stamped := n.must("logs", "streams", "-c", "talker", "--timestamps", "--tail=1")
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z tick \d+\n$`).MatchString(stamped) {
		t.Errorf("--timestamps: %q", stamped)
	}
	if out := n.must("logs", "streams", "-c", "talker", "--since=1h"); !strings.HasPrefix(out, "first\n") {
		t.Errorf("--since=1h: starts %q", head(out))
	}
	if out := n.must("logs", "streams", "-c", "talker", "--since-time="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); out != "" {
		t.Errorf("--since-time in the future: %q, want nothing", head(out))
	}
	if got := n.logsOverWebSocket(t, "streams", "talker"); !strings.HasPrefix(got, "first\nsecond\n") {
		t.Errorf("log over a WebSocket (binary.k8s.io): %q, want first, second…", head(got))
	}
	all := n.must("logs", "streams", "--all-containers")
	expectContains(t, "--all-containers", all, "first", "serving")
	expectContains(t, "-l", n.must("logs", "-l", "app=streams", "-c", "web"), "serving")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "nosuch"}, "container nosuch is not valid for pod streams"},
		{[]string{"-c", "talker", "--previous"}, `previous terminated container "talker" in pod "streams" not found`},
	} {
		_, errOut, err := n.kubectl(append([]string{"logs", "streams"}, bad.args...)...)
		if err == nil || !strings.Contains(errOut, bad.want) {
			t.Errorf("logs %v: %v, %q; want an error saying %q", bad.args, err, errOut, bad.want)
		}
	}
}

// logsOverWebSocket reads a container's log through pods/log over a
// WebSocket of the binary.k8s.io protocol, as the conformance suite does.
func (n *nodeCluster) logsOverWebSocket(t *testing.T, pod, container string) string {
	cfg, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := strings.Replace(cfg.Host, "https://", "wss://", 1) + "/api/v1/namespaces/default/pods/" + pod + "/log?container=" + container + "&limitBytes=13"
	wsCfg, err := websocket.NewConfig(u, "http://localhost")
	if err != nil {
		t.Fatal(err)
	}
	wsCfg.TlsConfig, wsCfg.Protocol = tlsCfg, []string{"binary.k8s.io"}
	ws, err := websocket.DialConfig(wsCfg)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer ws.Close()
	var out bytes.Buffer
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("reading the log over a WebSocket: %v", err)
			}
			return out.String()
		}
		out.Write(msg)
	}
}

// testLogsFollow: `logs -f` shows lines as the container writes them.
func (n *nodeCluster) testLogsFollow(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, cmd := n.kubectlStart(ctx, nil, "logs", "-f", "streams", "-c", "talker", "--tail=1")
	ticks := regexp.MustCompile(`tick (\d+)`)
	var first string
	waitUntilFor(t, "the first followed line", 10*time.Second, func() bool {
		m := ticks.FindStringSubmatch(out.String())
		if m != nil {
			first = m[1]
		}
		return m != nil
	})
	waitUntilFor(t, "three more lines while following", 10*time.Second, func() bool {
		return len(ticks.FindAllString(out.String(), -1)) >= 4
	})
	if got := out.String(); !strings.HasPrefix(got, "tick "+first+"\n") || strings.Contains(got, "first") {
		t.Errorf("followed %q: want the last line, then new ones", head(got))
	}
	cancel()
	_ = cmd.Wait()
}

func (n *nodeCluster) testExec(t *testing.T, env string) {
	envs := []string{env}
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		out, errOut, err := n.kubectlEnv(envs, stdin, append([]string{"exec"}, args...)...)
		code := 0
		if exit, ok := errors.AsType[*exec.ExitError](err); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("exec %v: %v", args, err)
		}
		return out, errOut, code
	}
	if out, errOut, code := run("", "streams", "-c", "talker", "--", "sh", "-c", "echo out; echo err >&2"); out != "out\n" || !strings.Contains(errOut, "err") || code != 0 {
		t.Errorf("exec echo: %q, %q, exit %d", out, errOut, code)
	}
	if _, errOut, code := run("", "streams", "-c", "talker", "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exit 7: kubectl exited %d (%s)", code, errOut)
	}
	if out, errOut, _ := run("piped through\n", "-i", "streams", "-c", "talker", "--", "cat"); out != "piped through\n" {
		t.Errorf("exec -i cat: %q (%s)", out, errOut)
	}
	if _, errOut, code := run("", "streams", "-c", "nosuch", "--", "true"); code == 0 || !strings.Contains(errOut, "container nosuch is not valid for pod streams") {
		t.Errorf("exec -c nosuch: exit %d, %q", code, errOut)
	}
}

// testPortForward: a local port forwarded to the pod's 8080 (directly, or
// as the Service's port 80) returns the page its httpd serves.
func (n *nodeCluster) testPortForward(t *testing.T, env, target string, remotePort int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := servertest.FreePorts(t, 1)[0]
	out, cmd := n.kubectlStart(ctx, []string{env}, "port-forward", target, fmt.Sprintf("%d:%d", port, remotePort))
	waitUntilFor(t, "port-forward listening", 20*time.Second, func() bool {
		return strings.Contains(out.String(), "Forwarding from")
	})
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 3 { // a connection each, through one forwarding session
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			t.Fatalf("request %d: %v; kubectl: %s", i, err, out.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello-from-web\n" {
			t.Errorf("request %d: %q", i, body)
		}
	}
	cancel()
	_ = cmd.Wait()
}

// testCopy: kubectl cp into the container and back (tar through exec).
func (n *nodeCluster) testCopy(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	src, back := filepath.Join(dir, "src.bin"), filepath.Join(dir, "back.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n.must("cp", src, "streams:/tmp/copied.bin", "-c", "talker")
	n.must("cp", "streams:/tmp/copied.bin", back, "-c", "talker")
	got, err := os.ReadFile(back)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("copied back %d bytes (%v), want the %d sent", len(got), err, len(data))
	}
}

// kubectlEnv runs kubectl with extra environment variables and stdin.
func (c *cluster) kubectlEnv(env []string, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := c.kubectlCmd(ctx, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// kubectlStart starts a long-running kubectl (logs -f, port-forward) that
// ends with ctx; its output (both streams) collects in the buffer.
func (c *cluster) kubectlStart(ctx context.Context, env []string, args ...string) (*syncBuffer, *exec.Cmd) {
	c.t.Helper()
	cmd := c.kubectlCmd(ctx, env, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	return out, cmd
}

func (c *cluster) kubectlCmd(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := c.command(ctx, kubectlBin, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+c.dataDir)
	for _, e := range env {
		if e != "" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	return cmd
}

// head is the start of a long output, for messages.
func head(s string) string { return s[:min(len(s), 200)] }

// testAttach: kubectl attach shows the container's output as it is
// written.
func (n *nodeCluster) testAttach(t *testing.T, env string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, cmd := n.kubectlStart(ctx, []string{env}, "attach", "streams", "-c", "talker")
	waitUntilFor(t, "ticks through attach", 15*time.Second, func() bool {
		return len(regexp.MustCompile(`tick \d+`).FindAllString(out.String(), -1)) >= 2
	})
	if strings.Contains(out.String(), "first") {
		t.Errorf("attach replayed old output: %q", head(out.String()))
	}
	cancel()
	_ = cmd.Wait()
}

// testRunInteractive: `kubectl run -i --rm` feeds stdin to a new pod's
// process (stdin, stdinOnce), shows its output, and deletes the pod.
func (n *nodeCluster) testRunInteractive(t *testing.T) {
	out, errOut, err := n.kubectlIn("hello there\n", "run", "reader", "-i", "--rm", "--restart=Never",
		"--image="+e2eImage, "--image-pull-policy=Never", "--", "sh", "-c", "read line; echo got $line")
	if err != nil || !strings.Contains(out, "got hello there") {
		t.Fatalf("run -i --rm: %v\n%s%s", err, out, errOut)
	}
	waitUntil(t, "the pod deleted", func() bool {
		_, errOut, err := n.kubectl("get", "pod", "reader")
		return err != nil && strings.Contains(errOut, "NotFound")
	})
}

// testExecTTY: exec with a terminal, through client-go's WebSocket (or
// SPDY) executor as kubectl -t uses it: the command sees a terminal of the
// size the client sent.
func (n *nodeCluster) testExecTTY(t *testing.T, spdy bool) {
	cfg, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u := n.client().CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("streams").
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{Container: "talker",
		// The size arrives just after the start, as with the kubelet: poll.
		Command: []string{"sh", "-c", `tty; for i in 1 2 3 4 5 6 7 8 9 10; do s=$(stty size 2>/dev/null); [ -n "$s" ] && [ "$s" != "0 0" ] && break; sleep 0.2; done; echo "$s"`},
		Stdout:  true, Stdin: true, TTY: true}, scheme.ParameterCodec).URL()
	executor, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if spdy {
		executor, err = remotecommand.NewSPDYExecutor(cfg, "POST", u)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdin, keepOpen := io.Pipe() // a terminal's input stays open; its end would hang the terminal up
	defer keepOpen.Close()
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: true,
		TerminalSizeQueue: &fixedSize{size: &remotecommand.TerminalSize{Width: 91, Height: 17}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "/dev/pts/") || !strings.Contains(got, "17 91") {
		t.Errorf("exec tty: %q, want a /dev/pts terminal of 17 rows and 91 columns", got)
	}
}

// fixedSize sends one terminal size, then none.
type fixedSize struct{ size *remotecommand.TerminalSize }

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	s := f.size
	f.size = nil
	if s == nil {
		time.Sleep(time.Hour) // Next blocks until there is a new size
	}
	return s
}

// testStreamErrors: each bad request fails promptly with a clear message,
// and the server process (API server and node API) is left with no more
// goroutines than before.
func (n *nodeCluster) testStreamErrors(t *testing.T) {
	before := n.goroutines(t)
	n.mustIn(`apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers: [{name: c, image: skiff.test/busybox:1, imagePullPolicy: Never, command: ["true"]}]
`, "apply", "-f", "-")
	waitUntil(t, "pod done Succeeded", func() bool { return n.podField("done", "{.status.phase}") == "Succeeded" })
	deadNode := n.fakeDeadNode(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"exec in a stopped container", []string{"exec", "done", "--", "true"}, "cannot exec into a container in a completed pod"},
		{"attach to a stopped container", []string{"attach", "done"}, "cannot attach a container in a completed pod"},
		{"logs of a missing container", []string{"logs", "streams", "-c", "nosuch"}, "container nosuch is not valid for pod streams"},
		{"logs on a dead node", []string{"logs", "on-dead-node"}, `node "` + deadNode + `" cannot be reached`},
		{"exec on a dead node", []string{"exec", "on-dead-node", "--", "true"}, `node "` + deadNode + `" cannot be reached`},
		{"port-forward to a dead node", []string{"port-forward", "on-dead-node", "0:80"}, `node "` + deadNode + `" cannot be reached`},
	} {
		start := time.Now()
		_, errOut, err := n.kubectl(tt.args...)
		if err == nil || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: %v, %q; want an error saying %q", tt.name, err, errOut, tt.want)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("%s took %s", tt.name, took)
		}
	}
	n.testForwardToClosedPort(t)
	n.must("delete", "pod", "done")
	n.must("delete", "pod", "on-dead-node", "--grace-period=0", "--force") // nothing runs it
	waitUntilFor(t, "goroutines back to the baseline", 30*time.Second, func() bool {
		return n.goroutines(t) <= before+10
	})
}

// testForwardToClosedPort: a connection forwarded to a port nobody listens
// on is closed, and kubectl reports why.
func (n *nodeCluster) testForwardToClosedPort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := servertest.FreePorts(t, 1)[0]
	out, cmd := n.kubectlStart(ctx, nil, "port-forward", "pod/streams", fmt.Sprintf("%d:9999", port))
	waitUntilFor(t, "port-forward listening", 20*time.Second, func() bool {
		return strings.Contains(out.String(), "Forwarding from")
	})
	client := &http.Client{Timeout: 10 * time.Second}
	if resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port)); err == nil {
		resp.Body.Close()
		t.Errorf("a request to a closed port answered %s", resp.Status)
	}
	waitUntilFor(t, "kubectl reporting the refused connection", 10*time.Second, func() bool {
		return strings.Contains(out.String(), "connection refused")
	})
	cancel()
	_ = cmd.Wait()
}

// fakeDeadNode registers a node whose API nobody serves (a closed port on
// 127.0.0.1) and binds a pod to it.
func (n *nodeCluster) fakeDeadNode(t *testing.T) string {
	ctx := context.Background()
	nodes := n.client().CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead-" + n.nodeName}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes.Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	closedPort := int32(servertest.FreePorts(t, 1)[0])
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error { // the node controller gives it a pod CIDR meanwhile
		node, err := nodes.Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = closedPort
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-dead-node"}, Spec: corev1.PodSpec{NodeName: node.Name,
		Containers: []corev1.Container{{Name: "c", Image: e2eImage}}}}
	pod, err = n.client().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning // as the node last reported, before it died
	if _, err := n.client().CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return node.Name
}

// goroutines is the server process's goroutine count, from its metrics.
func (n *nodeCluster) goroutines(t *testing.T) int {
	metrics := n.must("get", "--raw", "/metrics")
	m := regexp.MustCompile(`(?m)^go_goroutines (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatal("no go_goroutines in /metrics")
	}
	var count int
	fmt.Sscan(m[1], &count)
	return count
}

// testLogsFollowRotation: `logs -f` reads every line, in order, while the
// log file is rotated several times under it (64 KiB files, 3 kept).
func (n *nodeCluster) testLogsFollowRotation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, cmd := n.kubectlStart(ctx, nil, "logs", "-f", "streams", "-c", "burst")
	time.Sleep(time.Second) // following: the log is empty so far
	n.must("exec", "streams", "-c", "burst", "--", "touch", "/tmp/go")
	waitUntilFor(t, "all 4000 lines followed", 60*time.Second, func() bool {
		return strings.Contains(out.String(), "line 3999\n")
	})
	cancel()
	_ = cmd.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, line := range lines {
		if want := fmt.Sprintf("line %d", i); line != want {
			t.Fatalf("followed line %d is %q, want %q (%d lines)", i, line, want, len(lines))
		}
	}
	uid := n.podField("streams", "{.metadata.uid}")
	dir := filepath.Join(n.dataDir, "logs", "default_streams_"+uid, "burst")
	waitUntilFor(t, "2 rotated files kept beside the current one, the older gzipped", 10*time.Second, func() bool {
		rotated, _ := filepath.Glob(filepath.Join(dir, "0.log.*"))
		return len(rotated) == 2 && strings.HasSuffix(rotated[0], ".gz") && !strings.HasSuffix(rotated[1], ".gz")
	})
}

// testTop: kubectl top reads the metrics API, which the API server serves
// from the node's stats (two samples, 10 s apart, give a rate).
func (n *nodeCluster) testTop(t *testing.T) {
	var out string
	waitUntilFor(t, "pod metrics", 60*time.Second, func() bool {
		out, _, _ = n.kubectl("top", "pod", "streams", "--containers")
		return strings.Contains(out, "talker")
	})
	header, rows := columns(out)
	if !slices.Equal(header, []string{"POD", "NAME", "CPU(cores)", "MEMORY(bytes)"}) || len(rows) != 3 {
		t.Fatalf("top pod --containers:\n%s", out)
	}
	for _, row := range rows {
		if !regexp.MustCompile(`^\d+m$`).MatchString(row[2]) || !regexp.MustCompile(`^\d+Mi$`).MatchString(row[3]) {
			t.Errorf("top pod row %v: want CPU in millicores and memory in Mi", row)
		}
	}
	// The exact figures (kubectl rounds busybox's memory to 0Mi): every
	// container uses some memory, and the busy one some CPU.
	raw := n.must("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/streams")
	var m metricsv1beta1.PodMetrics
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Containers {
		if c.Usage.Memory().IsZero() || (c.Name == "talker" && c.Usage.Cpu().IsZero()) {
			t.Errorf("container %s: usage %v", c.Name, c.Usage)
		}
	}
	expectContains(t, "top pod -l", n.must("top", "pod", "-l", "app=streams"), "streams")
	nodes := n.must("top", "node")
	expectContains(t, "top node", nodes, n.nodeName, "CPU(cores)", "MEMORY(%)")
	if _, errOut, err := n.kubectl("top", "pod", "nosuch"); err == nil || !strings.Contains(errOut, "not found") {
		t.Errorf("top pod nosuch: %v, %q", err, errOut)
	}
}

// testLogsPrevious: --previous shows the log of the attempt before the
// current one.
func (n *nodeCluster) testLogsPrevious(t *testing.T) {
	n.mustIn(`apiVersion: v1
kind: Pod
metadata: {name: restarter}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "n=$(cat /data/n 2>/dev/null || echo 0); echo attempt $n; echo $((n+1)) > /data/n; sleep 1; exit 1"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`, "apply", "-f", "-")
	// The crash back-off (10 s) keeps the second attempt current a while.
	waitUntil(t, "a restart", func() bool { return n.podField("restarter", "{.status.containerStatuses[0].restartCount}") == "1" })
	if out := n.must("logs", "restarter", "--previous"); out != "attempt 0\n" {
		t.Errorf("--previous: %q, want the first attempt's", out)
	}
	waitUntil(t, "the current attempt's log", func() bool {
		out, _, _ := n.kubectl("logs", "restarter")
		return out == "attempt 1\n"
	})
	n.must("delete", "pod", "restarter")
}

// testLogsWaiting: the log of a container that has not started is an
// error saying why it waits.
func (n *nodeCluster) testLogsWaiting(t *testing.T) {
	n.must("run", "never", "--image=skiff.test/absent:1", "--image-pull-policy=Never", "--restart=Never")
	waitUntil(t, "ErrImageNeverPull", func() bool {
		return n.podField("never", "{.status.containerStatuses[0].state.waiting.reason}") == "ErrImageNeverPull"
	})
	_, errOut, err := n.kubectl("logs", "never")
	if want := `container "never" in pod "never" is waiting to start: ErrImageNeverPull`; err == nil || !strings.Contains(errOut, want) {
		t.Errorf("logs of a waiting container: %v, %q; want %q", err, errOut, want)
	}
	n.must("delete", "pod", "never")
}

// testRunTerminal: `kubectl run -it --rm` on a terminal (script(1) gives
// kubectl one): a shell in the new pod reads the commands typed, with a
// terminal of its own, and the pod is deleted after.
func (n *nodeCluster) testRunTerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give kubectl a terminal")
	}
	kubectl := strings.Join([]string{kubectlBin, "--kubeconfig", n.kubeconfig, "run", "shell", "-it", "--rm", "--restart=Never",
		"--image=" + e2eImage, "--image-pull-policy=Never", "--", "sh"}, " ")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qefc", kubectl, "/dev/null")
	cmd.Env = append(os.Environ(), "HOME="+n.dataDir, "TERM=dumb")
	cmd.WaitDelay = 5 * time.Second // kubectl, under script, may hold the output open
	typed, typing, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer typing.Close()
	cmd.Stdin = typed
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	typed.Close()
	waitUntilFor(t, "a shell prompt", 30*time.Second, func() bool {
		fmt.Fprint(typing, "\n") // kubectl attaches after sh printed its first prompt
		return strings.Contains(out.String(), "# ")
	})
	fmt.Fprint(typing, "tty; echo sum=$((20+22)); exit\n")
	err = cmd.Wait()
	if got := out.String(); err != nil || !strings.Contains(got, "/dev/pts/") || !strings.Contains(got, "sum=42") {
		t.Fatalf("run -it --rm: %v\n%s", err, got)
	}
	waitUntil(t, "the pod deleted", func() bool {
		_, errOut, err := n.kubectl("get", "pod", "shell")
		return err != nil && strings.Contains(errOut, "NotFound")
	})
}

// testNodeProxy: the node API's own paths, through the API server's
// nodes/<name>/proxy.
func (n *nodeCluster) testNodeProxy(t *testing.T) {
	base := "/api/v1/nodes/" + n.nodeName + "/proxy"
	if out := n.must("get", "--raw", base+"/healthz"); out != "ok" {
		t.Errorf("healthz: %q", out)
	}
	expectContains(t, "metrics", n.must("get", "--raw", base+"/metrics"), "go_goroutines")
	var summary struct {
		Node struct{ NodeName string }
		Pods []struct{ PodRef struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(n.must("get", "--raw", base+"/stats/summary")), &summary); err != nil {
		t.Fatal(err)
	}
	if summary.Node.NodeName != n.nodeName || !slices.ContainsFunc(summary.Pods, func(p struct{ PodRef struct{ Name string } }) bool {
		return p.PodRef.Name == "streams"
	}) {
		t.Errorf("stats summary: %+v", summary)
	}
	if _, errOut, err := n.kubectl("get", "--raw", "/api/v1/nodes/nosuch/proxy/healthz"); err == nil || !strings.Contains(errOut, "not found") {
		t.Errorf("proxy to a node that does not exist: %v, %q", err, errOut)
	}
}

// TestSeparateAgentNodeAPI: a `skiff agent` process of its own, given a
// serving certificate from the cluster CA (--tls-cert-file), serves
// kubectl logs and exec through the API server.
func TestSeparateAgentNodeAPI(t *testing.T) {
	n, _ := startSeparateNode(t)
	checkLogsAndExec(t, n)
}

// TestJoinedAgent: a `skiff agent` given only the server's URL and join
// token, started while the server is down, waits for it and then joins
// (client and serving certificates through the CSR API, both approved and
// signed by the server), runs a pod, and serves kubectl logs and exec
// through an API server that verifies its serving certificate.
func TestJoinedAgent(t *testing.T) {
	n := joinNode(t, true)
	var rows [][]string
	waitUntil(t, "both certificates issued", func() bool {
		_, rows = columns(n.must("get", "csr"))
		issued := map[string]bool{}
		for _, r := range rows {
			issued[r[2]] = r[5] == "Approved,Issued"
		}
		return len(rows) == 2 && issued["kubernetes.io/kube-apiserver-client-kubelet"] && issued["kubernetes.io/kubelet-serving"]
	})
	checkLogsAndExec(t, n)
	checkJourneyAcrossRestart(t, n)
}

// TestJoinedAgentRotation: with the server signing node certificates for
// 40 s, a joined agent renews its client and serving certificates without
// a restart; past the first ones' end its pod still runs, unrestarted, and
// logs and exec still reach it (the API server verifying the renewed
// serving certificate).
func TestJoinedAgentRotation(t *testing.T) {
	n := startJoinedNode(t, "--node-cert-validity", "40s")
	start := time.Now()
	checkLogsAndExec(t, n)
	waitUntilFor(t, "both certificates renewed", 90*time.Second, func() bool {
		_, rows := columns(n.must("get", "csr"))
		renewals := map[string]int{}
		for _, r := range rows {
			if r[3] == "system:node:"+n.nodeName && r[5] == "Approved,Issued" {
				renewals[r[2]]++
			}
		}
		return renewals["kubernetes.io/kube-apiserver-client-kubelet"] >= 1 && renewals["kubernetes.io/kubelet-serving"] >= 2
	})
	time.Sleep(time.Until(start.Add(45 * time.Second)))
	if out := n.must("exec", "hello", "--", "echo", "exec works"); out != "exec works\n" {
		t.Errorf("exec after the first certificates expired: %q", out)
	}
	if out := n.must("logs", "hello"); out != "hi from the node\n" {
		t.Errorf("logs after the first certificates expired: %q", out)
	}
	if out := n.must("get", "pod", "hello", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"); out != "0" {
		t.Errorf("the pod restarted %s times", out)
	}
}

// checkLogsAndExec runs a pod on n and reads its log and execs in it
// through the API server.
func checkLogsAndExec(t *testing.T, n *nodeCluster) {
	n.mustIn(`apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: skiff.test/busybox:1, imagePullPolicy: Never, command: ["sh", "-c", "echo hi from the node; sleep 3600"]}
`, "apply", "-f", "-")
	n.must("wait", "--for=condition=Ready", "pod/hello", "--timeout=90s")
	waitUntil(t, "the pod's log", func() bool {
		out, _, _ := n.kubectl("logs", "hello")
		return out == "hi from the node\n"
	})
	if out := n.must("exec", "hello", "--", "echo", "exec works"); out != "exec works\n" {
		t.Errorf("exec: %q", out)
	}
}
