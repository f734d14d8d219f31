package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/supervisor"
	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/test/nodetest"
)

// testImage is the busybox image every integration test runs.
const testImage = "skiff.test/busybox:1"

// testNode is a real control plane plus a real agent (its own containerd,
// runc, CNI bridge) on this machine, all under unique names.
type testNode struct {
	t      testing.TB
	server *servertest.Server
	client kubernetes.Interface
	cfg    Config
	cancel context.CancelFunc
	done   chan error
}

func requireRoot(t testing.TB) {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and real containerd, runc and CNI plugins (not -short)")
	}
}

func startTestNode(t testing.TB) *testNode {
	t.Helper()
	return startTestNodeWith(t, nil)
}

// startTestNodeWith lets the test change the agent's config before it starts.
func startTestNodeWith(t testing.TB, edit func(*Config)) *testNode {
	t.Helper()
	n := newTestNode(t, nil, edit)
	n.start()
	return n
}

// newTestNode starts the control plane (changed by editServer) and makes
// the agent's config (changed by edit), but does not start the agent.
func newTestNode(t testing.TB, editServer func(*controlplane.Config), edit func(*Config)) *testNode {
	t.Helper()
	requireRoot(t)
	dir := t.TempDir()
	m := nodetest.New(dir)
	server := servertest.StartWith(t, func(c *controlplane.Config) {
		c.ClusterCIDR = "10.251.0.0/16"
		c.NodeMonitorGracePeriod = 40 * time.Second
		if editServer != nil {
			editServer(c)
		}
	})
	writeTestImage(t, filepath.Join(dir, "agent", "images"))
	pause, err := images.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{t: t, server: server, client: server.Client(), cfg: Config{
		REST: server.RESTConfig(), NodeName: "node" + m.CgroupRoot[len("/skiff-test"):], DataDir: dir, PauseBinary: pause,
		NodeIP: "127.0.0.1", PodLogDir: filepath.Join(dir, "logs"), NetNSDir: m.NetNSDir,
		Bridge: m.Bridge, CgroupRoot: m.CgroupRoot, Namespace: "skiff-test",
		// The machine's KUBE- chains and cluster DNS address belong to the
		// e2e tests, which run beside these; the proxy and DNS have their
		// own tests.
		DisableProxy: true,
	}}
	if edit != nil {
		edit(&n.cfg)
	}
	t.Cleanup(n.cleanup)
	return n
}

func writeTestImage(t testing.TB, dir string) {
	t.Helper()
	tar, err := images.Busybox(testImage)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "busybox.tar"), tar, 0o644); err != nil {
		t.Fatal(err)
	}
}

// start runs the agent in the background; stop ends it (its pods keep running).
func (n *testNode) start() {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	go func() { n.done <- Run(ctx, n.cfg) }()
}

func (n *testNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			n.t.Errorf("agent: %v", err)
		}
	case <-time.After(30 * time.Second):
		n.t.Error("agent did not stop in 30s")
	}
	n.cancel = nil
}

// cleanup deletes every pod (the agent tears them down and removes them),
// stops the agent, then leaves the machine clean (nodetest), failing the
// test for anything the agent left.
func (n *testNode) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if n.cancel != nil {
		n.deleteAllPods(ctx)
		n.stop()
	}
	n.machine().Clean(n.t)
}

func (n *testNode) machine() nodetest.Node {
	return nodetest.Node{DataDir: n.cfg.DataDir, NetNSDir: n.cfg.NetNSDir, Bridge: n.cfg.Bridge, CgroupRoot: n.cfg.CgroupRoot, Namespace: n.cfg.Namespace}
}

func (n *testNode) deleteAllPods(ctx context.Context) {
	pods := n.client.CoreV1().Pods(metav1.NamespaceAll)
	list, _ := pods.List(ctx, metav1.ListOptions{})
	for _, p := range list.Items {
		_ = n.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	}
	for ctx.Err() == nil {
		if l, err := pods.List(ctx, metav1.ListOptions{}); err == nil && len(l.Items) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A finished pod is deleted at once, and the agent then removes it as
	// an orphan (its containers, then its directory and cgroup): wait for
	// that too before the agent is stopped.
	rt := n.runtime()
	for ctx.Err() == nil {
		if cs, err := rt.List(ctx, ""); err == nil && len(cs) == 0 && len(n.machine().PodCgroups()) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	n.t.Error("pods not deleted by the agent in time")
}

// waitPod waits until cond holds for the pod and returns it.
func (n *testNode) waitPod(ns, name, what string, timeout time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var pod *v1.Pod
	servertest.Eventually(n.t, what, timeout, func(ctx context.Context) (bool, string) {
		p, err := n.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && pod != nil {
			return false, describeStatus(pod) + " (then: " + err.Error() + ")"
		}
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p), describeStatus(p)
	})
	return pod
}

func describeStatus(p *v1.Pod) string {
	var b strings.Builder
	b.WriteString(string(p.Status.Phase))
	for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		b.WriteString(" " + cs.Name + ":")
		switch {
		case cs.State.Running != nil && cs.Ready:
			b.WriteString("running/ready")
		case cs.State.Running != nil:
			b.WriteString("running")
		case cs.State.Terminated != nil:
			b.WriteString("terminated/" + cs.State.Terminated.Reason)
		case cs.State.Waiting != nil:
			b.WriteString("waiting/" + cs.State.Waiting.Reason + "/" + cs.State.Waiting.Message)
		}
	}
	return b.String()
}

func (n *testNode) createPod(pod *v1.Pod) *v1.Pod {
	n.t.Helper()
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	pod.Spec.NodeName = n.cfg.NodeName
	created, err := n.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		n.t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	return created
}

func busybox(name string, command ...string) v1.Container {
	return v1.Container{Name: name, Image: testImage, ImagePullPolicy: v1.PullNever, Command: command}
}

// runtime is a second client of the agent's containerd, for checking.
func (n *testNode) runtime() *cri.Runtime {
	n.t.Helper()
	ctx := context.Background()
	d, err := supervisor.Start(ctx, supervisor.Config{Dir: n.cfg.dir("containerd")})
	if err != nil {
		n.t.Fatal(err)
	}
	rt, err := cri.Connect(ctx, cri.Config{Address: d.Address(), Namespace: n.cfg.Namespace, StateDir: n.t.TempDir(), PodLogDir: n.t.TempDir()})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { rt.Close() })
	return rt
}
