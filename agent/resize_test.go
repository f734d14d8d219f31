package agent

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cpuMem(cpu, mem string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
}

// resizePod is a running one-container Burstable pod asking for 100m and
// 64Mi, limited to 200m and 128Mi.
func resizePod(policy v1.ResourceResizeRestartPolicy) *v1.Pod {
	pod := unitPod(nil, "app")
	pod.Generation = 1
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: cpuMem("100m", "64Mi"), Limits: cpuMem("200m", "128Mi")}
	pod.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: policy}}
	return pod
}

// resizeTo changes the pod's cpu in the API as pods/resize would.
func (u *unitAgent) resizeTo(t *testing.T, pod *v1.Pod, cpuReq, cpuLim string) {
	t.Helper()
	cur, err := u.client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &cur.Spec.Containers[0].Resources
	r.Requests[v1.ResourceCPU], r.Limits[v1.ResourceCPU] = resource.MustParse(cpuReq), resource.MustParse(cpuLim)
	cur.Generation++
	if _, err := u.client.CoreV1().Pods(pod.Namespace).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func hasPodCondition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func TestResizeInPlace(t *testing.T) {
	pod := resizePod(v1.NotRequired)
	u := newUnitAgent(t, pod)
	got := u.sync(t, pod)
	cs := got.Status.ContainerStatuses[0]
	if cs.Resources == nil || cs.Resources.Limits.Cpu().String() != "200m" || cs.AllocatedResources.Cpu().String() != "100m" {
		t.Fatalf("status resources %+v allocated %v, want the spec's", cs.Resources, cs.AllocatedResources)
	}
	u.rt.Calls()
	u.resizeTo(t, pod, "150m", "300m")
	got = u.sync(t, pod)
	calls := u.rt.Calls()
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "update app ") || !strings.Contains(calls[0], `"cpu":"300m"`) {
		t.Fatalf("runtime calls %q, want one in-place update of app to 300m", calls)
	}
	cs = got.Status.ContainerStatuses[0]
	if cs.Resources.Limits.Cpu().String() != "300m" || cs.Resources.Requests.Cpu().String() != "150m" || cs.AllocatedResources.Cpu().String() != "150m" || cs.RestartCount != 0 {
		t.Errorf("after resize: resources %+v allocated %v restarts %d", cs.Resources, cs.AllocatedResources, cs.RestartCount)
	}
	if got.Status.ObservedGeneration != 2 || hasPodCondition(got, v1.PodResizeInProgress) != nil || hasPodCondition(got, v1.PodResizePending) != nil {
		t.Errorf("after resize: observedGeneration %d, conditions %+v", got.Status.ObservedGeneration, got.Status.Conditions)
	}
	if !u.hasEvent("Normal ResizeCompleted") {
		t.Error("no ResizeCompleted event")
	}
}

func TestResizeRestartsByPolicy(t *testing.T) {
	pod := resizePod(v1.RestartContainer)
	u := newUnitAgent(t, pod)
	u.sync(t, pod)
	u.rt.Calls()
	u.resizeTo(t, pod, "150m", "200m")
	got := u.sync(t, pod)
	wantCalls(t, "runtime calls", u.rt.Calls(), []string{"stop app", "create app", "start app"})
	cs := got.Status.ContainerStatuses[0]
	if cs.RestartCount != 1 || cs.State.Running == nil || cs.Resources.Requests.Cpu().String() != "150m" {
		t.Errorf("after a restarting resize: restarts %d state %+v resources %+v", cs.RestartCount, cs.State, cs.Resources)
	}
}

func TestResizeInfeasibleKeepsAllocation(t *testing.T) {
	pod := resizePod(v1.NotRequired)
	u := newUnitAgent(t, pod)
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: v1.NodeStatus{Allocatable: cpuMem("2", "4Gi")}}
	if _, err := u.client.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.node.Register(t.Context()); err != nil { // takes the node's allocatable
		t.Fatal(err)
	}
	u.sync(t, pod)
	u.rt.Calls()
	u.resizeTo(t, pod, "1000", "1000")
	got := u.sync(t, pod)
	wantCalls(t, "runtime calls", u.rt.Calls(), nil)
	c := hasPodCondition(got, v1.PodResizePending)
	if c == nil || c.Reason != v1.PodReasonInfeasible || !strings.Contains(c.Message, "cpu, requested: 1000000") {
		t.Fatalf("PodResizePending = %+v, want Infeasible naming cpu", c)
	}
	if cs := got.Status.ContainerStatuses[0]; cs.AllocatedResources.Cpu().String() != "100m" {
		t.Errorf("allocated %v, want the old 100m", cs.AllocatedResources)
	}
	other := unitPod(nil, "big")
	other.Name, other.UID = "big", "uid-big"
	other.Spec.Containers[0].Resources.Requests = cpuMem("1800m", "1Gi")
	u.pods.update(other)
	u.resizeTo(t, pod, "300m", "300m") // fits the node, not beside the other pod
	got = u.sync(t, pod)
	if c := hasPodCondition(got, v1.PodResizePending); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Fatalf("PodResizePending = %+v, want Deferred", c)
	}
	u.resizeTo(t, pod, "100m", "200m") // back to what it has
	if got = u.sync(t, pod); hasPodCondition(got, v1.PodResizePending) != nil {
		t.Errorf("conditions %+v after the resize was undone", got.Status.Conditions)
	}
}
