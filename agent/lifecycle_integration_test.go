package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestProbes: readiness flips Ready both ways (exec), an httpGet readiness
// probe on a named port passes, a failing liveness probe restarts the
// container with the kubelet's events, a probe on a port name the container
// does not have is reported and never passes.
func TestProbes(t *testing.T) {
	n := startTestNode(t)
	flappy := busybox("flappy", "sh", "-c", "touch /tmp/ready; sleep 12; rm /tmp/ready; exec sleep 3600")
	flappy.ReadinessProbe = execProbe("cat", "/tmp/ready")
	dying := busybox("dying", "sh", "-c", "touch /tmp/alive; sleep 10; rm /tmp/alive; exec sleep 3600")
	dying.LivenessProbe = execProbe("cat", "/tmp/alive")
	dying.LivenessProbe.TerminationGracePeriodSeconds = ptr.To[int64](1) // sleep ignores SIGTERM
	web := webPod("probed").Spec.Containers[0]
	web.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	web.ReadinessProbe = httpProbe("/index.html", intstr.FromString("http"))
	pod := webPod("probed")
	pod.Labels = map[string]string{"app": "probed"}
	pod.Spec.Containers = []v1.Container{web, flappy, dying}
	pod = n.createPod(pod)
	n.createService("probed", 8080) // selects app=probed
	t.Cleanup(func() {
		if t.Failed() {
			l, _ := n.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
			for _, e := range l.Items {
				t.Logf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	})

	readyOf := func(name string) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == name {
					return cs.Ready
				}
			}
			return false
		}
	}
	n.waitPod("default", "probed", "flappy ready", 60*time.Second, readyOf("flappy"))
	n.waitPod("default", "probed", "web ready (httpGet on a named port)", 30*time.Second, readyOf("web"))
	n.waitEndpoints("probed", true)
	n.waitPod("default", "probed", "flappy not ready", 30*time.Second, func(p *v1.Pod) bool {
		return !readyOf("flappy")(p) && conditionFalse(p, v1.PodReady)
	})
	n.waitEndpoints("probed", false)
	n.waitEventMatching(pod, "Unhealthy", func(m string) bool { return strings.HasPrefix(m, "Liveness probe failed:") })
	n.waitEventMatching(pod, "Killing", func(m string) bool { return m == "Container dying failed liveness probe, will be restarted" })
	n.waitPod("default", "probed", "dying restarted", 60*time.Second, func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "dying" {
				return cs.RestartCount >= 1
			}
		}
		return false
	})

	bad := busybox("bad", "sleep", "3600")
	bad.ReadinessProbe = httpProbe("/", intstr.FromString("nosuch"))
	badPod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "badport"}, Spec: v1.PodSpec{Containers: []v1.Container{bad}}})
	n.waitEventMatching(badPod, "Unhealthy", func(m string) bool { return strings.Contains(m, "nosuch") })
	if p := n.waitPod("default", "badport", "badport running", 30*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }); readyOf("bad")(p) {
		t.Error("a probe on a missing port passed")
	}
}

// TestLifecycleHooks: PostStart runs beside the entrypoint and the container
// is reported Running only once it completed; PreStop runs on delete before
// SIGTERM; a failing PostStart kills the container (FailedPostStartHook).
func TestLifecycleHooks(t *testing.T) {
	n := startTestNode(t)
	marks := t.TempDir()
	c := busybox("hooked", "sh", "-c", `trap 'test -f /marks/prestop && echo prestop-before-term > /marks/order; exit 0' TERM
while [ ! -f /marks/poststart ]; do sleep 0.1; done; echo saw poststart; while true; do sleep 0.1; done`)
	c.VolumeMounts = []v1.VolumeMount{{Name: "marks", MountPath: "/marks"}}
	c.Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 2; touch /marks/poststart"}}},
		PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/marks/prestop"}}},
	}
	failing := busybox("failing", "sleep", "3600")
	failing.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo no way; exit 3"}}}}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Spec: v1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](10),
		Containers:                    []v1.Container{c, failing},
		Volumes:                       []v1.Volume{{Name: "marks", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: marks}}}},
	}})

	// The first status that shows the container running comes after the hook.
	servertest.Eventually(t, "hooked running", 60*time.Second, func(ctx context.Context) (bool, string) {
		p, err := n.client.CoreV1().Pods("default").Get(ctx, "hooks", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
			return false, describeStatus(p)
		}
		if _, err := os.Stat(filepath.Join(marks, "poststart")); err != nil {
			t.Errorf("container reported running before its PostStart hook finished")
		}
		return true, ""
	})
	n.waitLog(pod, "hooked", "saw poststart")
	n.waitEventMatching(pod, "FailedPostStartHook", func(m string) bool { return strings.Contains(m, "no way") })
	n.waitPod("default", "hooks", "failing container restarted", 60*time.Second, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 2 && p.Status.ContainerStatuses[1].RestartCount >= 1
	})

	if err := n.client.CoreV1().Pods("default").Delete(context.Background(), "hooks", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "PreStop before SIGTERM", 30*time.Second, func(context.Context) (bool, string) {
		b, err := os.ReadFile(filepath.Join(marks, "order"))
		return err == nil && strings.TrimSpace(string(b)) == "prestop-before-term", string(b)
	})
}

func execProbe(cmd ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}, PeriodSeconds: 1, FailureThreshold: 1}
}

func httpProbe(path string, port intstr.IntOrString) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: port}}, PeriodSeconds: 1, FailureThreshold: 1}
}

func conditionFalse(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionFalse
		}
	}
	return false
}

// TestTermination: exit reasons and messages — a memory hog over its limit
// is OOMKilled (137), a container's termination log becomes its message,
// FallbackToLogsOnError takes the end of the log of a failed container —
// and activeDeadlineSeconds ends a pod with DeadlineExceeded.
func TestTermination(t *testing.T) {
	n := startTestNode(t)
	hog := busybox("hog", "dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1")
	hog.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("16Mi")}
	msg := busybox("msg", "sh", "-c", "echo goodbye > /dev/termination-log; exit 1")
	fallback := busybox("fallback", "sh", "-c", "echo first; echo last words; exit 2")
	fallback.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	for _, c := range []v1.Container{hog, msg, fallback} {
		n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: c.Name}, Spec: v1.PodSpec{
			Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyNever}})
	}
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "deadline"}, Spec: v1.PodSpec{
		ActiveDeadlineSeconds: ptr.To[int64](3), TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []v1.Container{busybox("c", "sleep", "3600")}}})

	tests := []struct {
		pod, reason, message string
		code                 int32
	}{
		{"hog", "OOMKilled", "", 137},
		{"msg", "Error", "goodbye\n", 1},
		{"fallback", "Error", "first\nlast words", 2},
	}
	for _, tt := range tests {
		p := n.waitPod("default", tt.pod, tt.pod+" failed", 60*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.Reason != tt.reason || term.Message != tt.message || term.ExitCode != tt.code {
			t.Errorf("%s: terminated %+v, want reason %s, message %q, code %d", tt.pod, term, tt.reason, tt.message, tt.code)
		}
	}
	p := n.waitPod("default", "deadline", "deadline exceeded", 30*time.Second, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
	n.waitEvent(p, "DeadlineExceeded")
	n.waitPod("default", "deadline", "its container stopped", 30*time.Second, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
}

// TestSidecars: an init container with restartPolicy Always starts before
// the init containers after it and keeps running beside the main
// container, and is restarted when it exits.
func TestSidecars(t *testing.T) {
	n := startTestNode(t)
	side := busybox("side", "sh", "-c", "echo up > /shared/side; sleep 5; exit 1")
	side.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	check := busybox("check", "cat", "/shared/side")
	main := busybox("main", "sleep", "3600")
	for _, c := range []*v1.Container{&side, &check, &main} {
		c.VolumeMounts = []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	}
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sidecars"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{side, check}, Containers: []v1.Container{main},
		Volumes: []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
	}})
	n.waitPod("default", "sidecars", "running beside its sidecar", 60*time.Second, func(p *v1.Pod) bool {
		return running(p) && len(p.Status.InitContainerStatuses) == 2 && p.Status.InitContainerStatuses[0].State.Running != nil &&
			p.Status.InitContainerStatuses[1].State.Terminated != nil && p.Status.InitContainerStatuses[1].State.Terminated.ExitCode == 0
	})
	n.waitPod("default", "sidecars", "sidecar restarted, main untouched", 60*time.Second, func(p *v1.Pod) bool {
		return p.Status.InitContainerStatuses[0].RestartCount >= 1 && p.Status.ContainerStatuses[0].RestartCount == 0 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
}

// waitEndpoints waits until the Service's Endpoints list its one pod as
// ready (addresses) or not ready (notReadyAddresses).
func (n *testNode) waitEndpoints(service string, ready bool) {
	n.t.Helper()
	servertest.Eventually(n.t, fmt.Sprintf("endpoints of %s ready=%v", service, ready), 30*time.Second, func(ctx context.Context) (bool, string) {
		ep, err := n.client.CoreV1().Endpoints("default").Get(ctx, service, metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 {
			return false, fmt.Sprint(ep, err)
		}
		s := ep.Subsets[0]
		if ready {
			return len(s.Addresses) == 1 && len(s.NotReadyAddresses) == 0, fmt.Sprint(s)
		}
		return len(s.Addresses) == 0 && len(s.NotReadyAddresses) == 1, fmt.Sprint(s)
	})
}
