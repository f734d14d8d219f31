package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/cri"
)

// TestInPlaceResize: a resize through pods/resize reaches the running
// container's cgroup (and its pod's) without a restart, and the pod's
// status reports the new resources once they are applied.
func TestInPlaceResize(t *testing.T) {
	n := startTestNode(t)
	c := busybox("app", "sleep", "3600")
	c.Resources = v1.ResourceRequirements{Requests: cpuMem("100m", "32Mi"), Limits: cpuMem("200m", "64Mi")}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resized"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}})
	running := n.waitPod("default", pod.Name, "running", 60*time.Second, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	id := strings.TrimPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	container := cri.ContainerCgroup(n.cfg.CgroupRoot, string(pod.UID), id)
	checkCgroupLimits(t, "before", container, 100, 200, 64<<20)

	patch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m","memory":"96Mi"}}}]}}`
	if _, err := n.client.CoreV1().Pods("default").Patch(context.Background(), pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resize: %v", err)
	}
	resized := n.waitPod("default", pod.Name, "resized", 30*time.Second, func(p *v1.Pod) bool {
		r := p.Status.ContainerStatuses[0].Resources
		return p.Status.ObservedGeneration == 2 && r != nil && r.Limits.Cpu().String() == "300m"
	})
	if cs := resized.Status.ContainerStatuses[0]; cs.RestartCount != 0 || cs.AllocatedResources.Cpu().String() != "150m" {
		t.Errorf("after resize: restarts %d, allocated %v", cs.RestartCount, cs.AllocatedResources)
	}
	for _, cond := range resized.Status.Conditions {
		if cond.Type == v1.PodResizeInProgress || cond.Type == v1.PodResizePending {
			t.Errorf("condition %s still set: %+v", cond.Type, cond)
		}
	}
	checkCgroupLimits(t, "after", container, 150, 300, 96<<20)
	checkCgroupLimits(t, "pod after", cri.PodCgroup(n.cfg.CgroupRoot, string(pod.UID)), 150, 300, 96<<20)
}

// checkCgroupLimits checks a cgroup's cpu shares (or weight), quota over
// 100ms and memory limit against a cpu request and limit in millicores
// and a memory limit, on cgroup v1 or v2.
func checkCgroupLimits(t *testing.T, what, cgroup string, cpuReq, cpuLim, mem int64) {
	t.Helper()
	shares := cpuReq * 1024 / 1000
	quota := strconv.FormatInt(cpuLim*100, 10)
	if cgroups.Mode() == cgroups.Unified {
		dir := filepath.Join("/sys/fs/cgroup", cgroup)
		checkCgroupFile(t, what, dir, "cpu.max", quota+" 100000")
		checkCgroupFile(t, what, dir, "memory.max", strconv.FormatInt(mem, 10))
		checkCgroupFile(t, what, dir, "cpu.weight", strconv.FormatInt(1+((shares-2)*9999)/262142, 10))
		return
	}
	checkCgroupFile(t, what, filepath.Join("/sys/fs/cgroup/cpu", cgroup), "cpu.cfs_quota_us", quota)
	checkCgroupFile(t, what, filepath.Join("/sys/fs/cgroup/cpu", cgroup), "cpu.shares", strconv.FormatInt(shares, 10))
	checkCgroupFile(t, what, filepath.Join("/sys/fs/cgroup/memory", cgroup), "memory.limit_in_bytes", strconv.FormatInt(mem, 10))
}

func checkCgroupFile(t *testing.T, what, dir, file, want string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := strings.TrimSpace(string(data)); got != want {
		t.Errorf("%s: %s = %q, want %q", what, file, got, want)
	}
}

// TestContainerSeesItsCgroup: a container reads its own limits under
// /sys/fs/cgroup (read-only), as under containerd's CRI plugin: the
// conformance suite checks resizes that way.
func TestContainerSeesItsCgroup(t *testing.T) {
	n := startTestNode(t)
	c := busybox("app", "sh", "-c", `f=/sys/fs/cgroup/memory/memory.limit_in_bytes; [ -e $f ] || f=/sys/fs/cgroup/memory.max
cat $f; (echo 100000000 > $f) 2>/dev/null || echo read-only`)
	c.Resources = v1.ResourceRequirements{Limits: cpuMem("200m", "64Mi")}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cgroup-view"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{c}}})
	n.waitPod("default", pod.Name, "succeeded", 60*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if got, want := n.containerLog(pod, "app"), "67108864\nread-only\n"; got != want {
		t.Errorf("the container read %q, want %q", got, want)
	}
}
