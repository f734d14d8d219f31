package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/supervisor"
)

func TestCrashLoopBackOff(t *testing.T) {
	n := startTestNode(t)
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash"},
		Spec: v1.PodSpec{Containers: []v1.Container{busybox("c", "sh", "-c", "echo boom; exit 3")}}})
	pod := n.waitPod("default", "crash", "crash looping", 60*time.Second, func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	cs := pod.Status.ContainerStatuses[0]
	if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Errorf("last state %+v", cs.LastTerminationState)
	}
	n.waitEvent(pod, "BackOff")
	// The first restart is immediate, as the kubelet's; the next waits
	// out a back-off of 10s after the exit of attempt 1.
	first := cs.LastTerminationState.Terminated.FinishedAt.Time
	pod = n.waitPod("default", "crash", "second restart", 60*time.Second, func(p *v1.Pod) bool {
		return p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	if gap := attemptStart(pod.Status.ContainerStatuses[0]).Sub(first); gap < 9*time.Second {
		t.Errorf("attempt 2 started %v after attempt 1 ended, want a 10s back-off", gap)
	}
}

// attemptStart is when the container's current attempt started.
func attemptStart(cs v1.ContainerStatus) time.Time {
	if cs.State.Running != nil {
		return cs.State.Running.StartedAt.Time
	}
	if cs.State.Terminated != nil {
		return cs.State.Terminated.StartedAt.Time
	}
	return cs.LastTerminationState.Terminated.StartedAt.Time
}

func TestBadInputIsReported(t *testing.T) {
	n := startTestNode(t)
	missing := busybox("c", "sleep", "60")
	missing.Image = "skiff.test/missing:1"
	unreachable := busybox("c", "sleep", "60")
	unreachable.Image, unreachable.ImagePullPolicy = "127.0.0.1:1/nope:1", v1.PullIfNotPresent
	tests := []struct {
		name      string
		container v1.Container
		reasons   []string // waiting reasons that may show
	}{
		{"never-pull", missing, []string{"ErrImageNeverPull"}},
		{"unreachable", unreachable, []string{"ErrImagePull", "ImagePullBackOff"}},
		{"no-such-command", busybox("c", "/no/such/command"), []string{"RunContainerError", "CreateContainerError", "CrashLoopBackOff"}},
	}
	for _, tt := range tests {
		n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.name}, Spec: v1.PodSpec{Containers: []v1.Container{tt.container}}})
	}
	for _, tt := range tests {
		n.waitPod("default", tt.name, tt.name+" reports "+strings.Join(tt.reasons, "|"), 60*time.Second, func(p *v1.Pod) bool {
			if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			for _, r := range tt.reasons {
				if w.Reason == r && (r == "CrashLoopBackOff" || w.Message != "") {
					return true
				}
			}
			return false
		})
	}
	// A failed create leaves no container behind: a container without a
	// task may only be one a retry is creating right now.
	half := func() map[string]bool {
		all, err := n.runtime().List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, c := range all {
			if c.Kind == cri.KindContainer && c.State == cri.StateUnknown {
				ids[c.ID] = true
			}
		}
		return ids
	}
	before := half()
	time.Sleep(2 * time.Second)
	for id := range half() {
		if before[id] {
			t.Errorf("half-created container %s left behind", id)
		}
	}
}

func TestAgentRestartAdoptsPods(t *testing.T) {
	n := startTestNode(t)
	n.createPod(webPod("web"))
	before := n.waitPod("default", "web", "web running", 90*time.Second, running)

	n.stop()
	n.start()
	// Containers keep running while the agent is away and after it comes
	// back: same IDs, no restarts, one sandbox.
	time.Sleep(3 * time.Second)
	after := n.waitPod("default", "web", "web running after restart", 30*time.Second, running)
	for i, cs := range after.Status.ContainerStatuses {
		if cs.ContainerID != before.Status.ContainerStatuses[i].ContainerID || cs.RestartCount != 0 {
			t.Errorf("container %s changed: %s → %s, restarts %d", cs.Name, before.Status.ContainerStatuses[i].ContainerID, cs.ContainerID, cs.RestartCount)
		}
	}
	if after.Status.PodIP != before.Status.PodIP {
		t.Errorf("pod IP %s → %s", before.Status.PodIP, after.Status.PodIP)
	}
	n.checkOneSandbox(after)

	// containerd dies under running pods: the agent's supervisor restarts
	// it, the shims kept the containers running, nothing is recreated.
	d, err := supervisor.Start(context.Background(), supervisor.Config{Dir: n.cfg.dir("containerd")})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(d.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "containerd back", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := n.runtime().List(ctx, "")
		return err == nil, errString(err)
	})
	time.Sleep(3 * time.Second)
	final := n.waitPod("default", "web", "web running after containerd restart", 30*time.Second, running)
	for i, cs := range final.Status.ContainerStatuses {
		if cs.ContainerID != before.Status.ContainerStatuses[i].ContainerID || cs.RestartCount != 0 {
			t.Errorf("container %s changed after containerd restart", cs.Name)
		}
	}
	if body := httpGet(t, "http://"+final.Status.PodIP+":8080/index.html"); body != "hello from web\n" {
		t.Errorf("pod answers %q", body)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (n *testNode) checkOneSandbox(pod *v1.Pod) {
	n.t.Helper()
	all, err := n.runtime().List(context.Background(), string(pod.UID))
	if err != nil {
		n.t.Fatal(err)
	}
	sandboxes, containers := 0, 0
	for _, c := range all {
		if c.Kind == cri.KindSandbox {
			sandboxes++
		} else {
			containers++
		}
	}
	want := len(pod.Spec.InitContainers) + len(pod.Spec.Containers)
	if sandboxes != 1 || containers != want {
		n.t.Errorf("runtime has %d sandboxes and %d containers, want 1 and %d", sandboxes, containers, want)
	}
}

// waitEvent waits for an event with reason about the pod.
func (n *testNode) waitEvent(pod *v1.Pod, reason string) {
	n.t.Helper()
	n.waitEventMatching(pod, reason, func(string) bool { return true })
}

func (n *testNode) waitEventMatching(pod *v1.Pod, reason string, match func(message string) bool) {
	n.t.Helper()
	servertest.Eventually(n.t, "event "+reason, 30*time.Second, func(ctx context.Context) (bool, string) {
		l, err := n.client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			return false, err.Error()
		}
		seen := ""
		for _, e := range l.Items {
			if e.Reason == reason && match(e.Message) {
				return true, ""
			}
			seen += e.Reason + ": " + e.Message + "; "
		}
		return false, seen
	})
}

// A pod force-deleted while the agent is down is an orphan when it comes
// back: its containers, sandbox and network go.
func TestOrphansRemoved(t *testing.T) {
	n := startTestNode(t)
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: v1.PodSpec{Containers: []v1.Container{busybox("c", "sleep", "3600")}}})
	pod := n.waitPod("default", "orphan", "orphan running", 60*time.Second, running)
	n.stop()
	if err := n.client.CoreV1().Pods("default").Delete(context.Background(), "orphan", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	n.start()
	servertest.Eventually(t, "orphan removed", 60*time.Second, func(ctx context.Context) (bool, string) {
		left, err := n.runtime().List(ctx, string(pod.UID))
		if err != nil {
			return false, err.Error()
		}
		entries, _ := os.ReadDir(n.cfg.NetNSDir)
		return len(left) == 0 && len(entries) == 0, fmt.Sprintf("%d containers, %d netns", len(left), len(entries))
	})
}

// A pod whose CNI ADD fails (the node's pod CIDR has no address left) gets
// FailedCreatePodSandBox, leaves no namespace behind, and starts once an
// address is free again.
func TestSandboxFailureIsRetried(t *testing.T) {
	requireRoot(t)
	n := startTestNodeWith(t, func(c *Config) {
		// Registered before the agent, with a /30: host-local hands out one address.
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.NodeName}, Spec: v1.NodeSpec{PodCIDR: "10.251.255.0/30"}}
		client := kubernetes.NewForConfigOrDie(c.REST)
		if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	sleeper := func(name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []v1.Container{busybox("c", "sleep", "3600")}}}
	}
	n.createPod(sleeper("first"))
	n.waitPod("default", "first", "first running", 60*time.Second, running)
	second := n.createPod(sleeper("second"))
	n.waitEventMatching(second, "FailedCreatePodSandBox", func(msg string) bool { return strings.Contains(msg, "no IP addresses available") })
	// Only the first pod's namespace stays; a retry may hold one for a moment.
	names := func() map[string]bool {
		entries, _ := os.ReadDir(n.cfg.NetNSDir)
		out := map[string]bool{}
		for _, e := range entries {
			out[e.Name()] = true
		}
		return out
	}
	before := names()
	time.Sleep(1500 * time.Millisecond)
	stayed := 0
	for name := range names() {
		if before[name] {
			stayed++
		}
	}
	if stayed != 1 {
		t.Errorf("%d network namespaces stayed, want only the first pod's", stayed)
	}
	if err := n.client.CoreV1().Pods("default").Delete(context.Background(), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitPod("default", "second", "second running once an address is free", 90*time.Second, running)
}
