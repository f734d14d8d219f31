package agent

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-lab/skiff/cri"
)

func TestDeadContainers(t *testing.T) {
	exited, run := cri.StateExited, cri.StateRunning
	st := groupState([]cri.Container{
		ctr("a", 0, "s", exited, 1), ctr("a", 1, "s", exited, 1), ctr("a", 2, "s", exited, 1), ctr("a", 3, "s", run, 0),
		ctr("b", 0, "s", exited, 0), ctr("b", 1, "s", run, 0),
	})
	var got []string
	for _, c := range deadContainers(st) {
		got = append(got, c.ID)
	}
	if len(got) != 2 || !(got[0] == "a1" && got[1] == "a0" || got[0] == "a0" && got[1] == "a1") {
		t.Errorf("dead containers %v, want a0 and a1 (a2 and a3 are kept)", got)
	}
}

func TestPodCgroupResources(t *testing.T) {
	limited := func(cpu, mem string) v1.Container {
		r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		return v1.Container{Name: cpu, Resources: v1.ResourceRequirements{Requests: r, Limits: r}}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{limited("250m", "64Mi"), limited("500m", "128Mi")}}}
	pod.Status.QOSClass = v1.PodQOSGuaranteed
	res := podCgroupResources(pod)
	if *res.CPU.Shares != 768 || *res.CPU.Quota != 75000 || *res.CPU.Period != 100000 || *res.Memory.Limit != 192<<20 {
		t.Errorf("guaranteed pod: shares %d quota %d period %d memory %d", *res.CPU.Shares, *res.CPU.Quota, *res.CPU.Period, *res.Memory.Limit)
	}
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "free"})
	pod.Status.QOSClass = v1.PodQOSBurstable
	if res := podCgroupResources(pod); res.CPU.Quota != nil || res.Memory != nil {
		t.Errorf("a container without limits leaves the pod unlimited: %+v", res)
	}
	pod.Status.QOSClass = v1.PodQOSBestEffort
	if res := podCgroupResources(pod); res != nil {
		t.Errorf("best effort: %+v", res)
	}
}
