package agent

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/agent/node"
)

// The executor's unit tests: syncPod against a recording runtime and
// network (fakes_test.go) and client-go's fake clientset. No root, no
// containerd; the same paths run for real in the integration tests.

const unitImage = "docker.io/library/busybox:latest"

type unitAgent struct {
	*Agent
	rt     *fakeRuntime
	net    *fakeNetwork
	client *fake.Clientset
	events *record.FakeRecorder
}

func newUnitAgent(t *testing.T, pod *v1.Pod) *unitAgent {
	t.Helper()
	dir := t.TempDir()
	client := fake.NewClientset(pod)
	cfg := Config{NodeName: "node1", DataDir: dir, PodLogDir: dir + "/logs"}
	cfg.setDefaults()
	u := &unitAgent{rt: newFakeRuntime(dir, unitImage), net: newFakeNetwork(dir), client: client,
		events: record.NewFakeRecorder(1000)}
	u.Agent = &Agent{cfg: cfg, client: client, rt: u.rt, net: u.net, clock: clock.RealClock{},
		crashBackoff: flowcontrol.NewBackOff(10*time.Second, 5*time.Minute),
		pullBackoff:  flowcontrol.NewBackOff(10*time.Second, 5*time.Minute),
		waits:        newPodMemory(), pods: newPodWorkers(), allocs: newAllocations(), recorder: u.events,
		pauseImage: "skiff.io/pause:test", nodeIP: "10.0.0.5",
		node: node.New(node.Config{Name: "node1", IP: "10.0.0.5", DataDir: dir}, client, nil, clock.RealClock{})}
	u.startProbes(u.rt)
	cidr := "10.244.0.0/24"
	u.podCIDR.Store(&cidr)
	objects, err := watchPodObjects(t.Context(), client, "node", func(string, string, string) {}, func(types.UID) {})
	if err != nil {
		t.Fatal(err)
	}
	u.objects = objects
	return u
}

// sync syncs the pod as the API has it now, as a pod worker would, and
// returns the pod as the API has it after (nil once deleted).
func (u *unitAgent) sync(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	cur, err := u.syncFailing(t, pod)
	if err != nil {
		t.Fatalf("syncPod: %v", err)
	}
	return cur
}

// syncFailing is sync for a sync that may fail: it returns the error.
func (u *unitAgent) syncFailing(t *testing.T, pod *v1.Pod) (*v1.Pod, error) {
	t.Helper()
	cur, err := u.client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, syncErr := u.syncPod(t.Context(), cur)
	cur, err = u.client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, syncErr
	}
	if err != nil {
		t.Fatal(err)
	}
	return cur, syncErr
}

func unitPod(inits []string, mains ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{NodeName: "node1", RestartPolicy: v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](1)}}
	for _, name := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: name, Image: "busybox"})
	}
	for _, name := range mains {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: name, Image: "busybox"})
	}
	return pod
}

func wantCalls(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestSyncPodCreatesSandboxThenReplans(t *testing.T) {
	pod := unitPod(nil, "app")
	u := newUnitAgent(t, pod)
	got := u.sync(t, pod)
	// One sync: the sandbox, then the plan made again against it starts
	// the container, then the status says Running with the pod's IP.
	wantCalls(t, "runtime calls", u.rt.Calls(), []string{"run sandbox", "create app", "start app"})
	wantCalls(t, "network calls", u.net.Calls(), []string{"add web"})
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.244.0.2" {
		t.Fatalf("status: phase %q IP %q, want Running 10.244.0.2", got.Status.Phase, got.Status.PodIP)
	}
	if cs := got.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Running == nil || cs[0].ContainerID != "containerd://c1" {
		t.Fatalf("container statuses %+v, want app running as containerd://c1", cs)
	}
	// Nothing more to do: a second sync changes nothing in the runtime.
	u.sync(t, pod)
	wantCalls(t, "second sync", u.rt.Calls(), nil)
}

func TestSyncPodStartsInitContainersInOrder(t *testing.T) {
	pod := unitPod([]string{"init1", "init2"}, "app1", "app2")
	u := newUnitAgent(t, pod)
	u.rt.exitOnStart["init1"], u.rt.exitOnStart["init2"] = 0, 0
	// Init containers that finish at once: one sync observes each exit and
	// starts the next.
	pod = u.sync(t, pod)
	wantCalls(t, "runtime calls", u.rt.Calls(), []string{"run sandbox",
		"create init1", "start init1", "create init2", "start init2",
		"create app1", "start app1", "create app2", "start app2"})
	if pod.Status.Phase != v1.PodRunning || len(pod.Status.InitContainerStatuses) != 2 {
		t.Fatalf("phase %q, init statuses %+v", pod.Status.Phase, pod.Status.InitContainerStatuses)
	}
	for _, s := range pod.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Errorf("init container %s: %+v, want terminated with 0", s.Name, s.State)
		}
	}
}

func TestSyncPodCrashingContainerBacksOff(t *testing.T) {
	pod := unitPod(nil, "app")
	u := newUnitAgent(t, pod)
	u.rt.exitOnStart["app"] = 1
	retry, err := u.syncPod(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	// Started, restarted at once (the first restart does not wait, as the
	// kubelet's), then the sync stops: the next restart waits out the
	// back-off, and the sync asks to run again when it ends.
	wantCalls(t, "runtime calls", u.rt.Calls(), []string{"run sandbox", "create app", "start app", "create app", "start app"})
	if retry <= 0 || retry > 10*time.Second {
		t.Errorf("retry after %v, want the 10 s crash back-off", retry)
	}
	got, err := u.client.CoreV1().Pods("default").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := got.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "CrashLoopBackOff" || cs[0].RestartCount != 1 {
		t.Fatalf("container statuses %+v, want app waiting in CrashLoopBackOff after 1 restart", cs)
	}
}

func TestSyncPodFailedInitContainerHoldsTheRest(t *testing.T) {
	pod := unitPod([]string{"init"}, "app")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	u := newUnitAgent(t, pod)
	u.rt.exitOnStart["init"] = 3
	pod = u.sync(t, pod)
	pod = u.sync(t, pod)
	calls := u.rt.Calls()
	if slices.Contains(calls, "create app") {
		t.Fatalf("app created after its init container failed: %q", calls)
	}
	if pod.Status.Phase != v1.PodFailed {
		t.Fatalf("phase %q, want Failed (restartPolicy Never, init exited 3)", pod.Status.Phase)
	}
}

func TestSyncPodReportsStartFailure(t *testing.T) {
	pod := unitPod(nil, "app")
	u := newUnitAgent(t, pod)
	u.rt.failStart["app"] = errors.New("exec: \"nope\": executable file not found")
	got, err := u.syncFailing(t, pod)
	if err == nil {
		t.Fatal("syncPod: no error, want the failed start (the worker retries with back-off)")
	}
	cs := got.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "RunContainerError" {
		t.Fatalf("container statuses %+v, want app waiting with RunContainerError", cs)
	}
	if cs[0].Ready || cs[0].Started == nil || *cs[0].Started {
		t.Errorf("app ready %v started %v, want neither", cs[0].Ready, cs[0].Started)
	}
	if !u.hasEvent("Warning Failed") {
		t.Error("no Failed event")
	}
}

func TestSyncPodKillsOnDeletion(t *testing.T) {
	pod := unitPod(nil, "app1", "app2")
	u := newUnitAgent(t, pod)
	u.sync(t, pod)
	u.rt.Calls()
	u.net.Calls()
	deleting, err := u.client.CoreV1().Pods("default").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = ptr.To(metav1.Now()), ptr.To[int64](1)
	if _, err := u.client.CoreV1().Pods("default").Update(context.Background(), deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := u.sync(t, pod); got != nil {
		t.Fatalf("pod still in the API after its containers stopped: %+v", got.Status)
	}
	calls := u.rt.Calls()
	for _, want := range []string{"stop app1", "stop app2", "stop sandbox"} {
		if !slices.Contains(calls, want) {
			t.Errorf("runtime calls %q lack %q", calls, want)
		}
	}
	// Containers stop before their sandbox.
	if slices.Index(calls, "stop sandbox") < slices.Index(calls, "stop app1") {
		t.Errorf("sandbox stopped before a container: %q", calls)
	}
	wantCalls(t, "network calls", u.net.Calls(), []string{"del"})
}

// TestSyncPodReportsHowAHeldPodEnded: a deleted pod that a finalizer
// holds (a Job's, until the Job counts it) gets a terminal phase before
// its object is let go; others do not cost the write.
func TestSyncPodReportsHowAHeldPodEnded(t *testing.T) {
	for _, held := range []bool{true, false} {
		pod := unitPod(nil, "app")
		if held {
			pod.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
		}
		u := newUnitAgent(t, pod)
		u.sync(t, pod)
		deleting, err := u.client.CoreV1().Pods("default").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = ptr.To(metav1.Now()), ptr.To[int64](1)
		if _, err := u.client.CoreV1().Pods("default").Update(t.Context(), deleting, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		u.client.ClearActions()
		u.sync(t, pod)
		var phases []v1.PodPhase
		for _, a := range u.client.Actions() {
			if upd, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
				phases = append(phases, upd.GetObject().(*v1.Pod).Status.Phase)
			}
		}
		if want := held; slices.Contains(phases, v1.PodFailed) != want {
			t.Errorf("held %v: status phases written %v, want Failed written %v", held, phases, want)
		}
	}
}

// hasEvent says whether an event starting with prefix ("Warning Failed")
// was recorded, draining what was.
func (u *unitAgent) hasEvent(prefix string) bool {
	found := false
	for {
		select {
		case e := <-u.events.Events:
			if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
				found = true
			}
		default:
			return found
		}
	}
}
