package agent

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEmptyDirOverLimit(t *testing.T) {
	limit := resource.MustParse("1Mi")
	vol := func(name string, medium v1.StorageMedium, limit *resource.Quantity) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium, SizeLimit: limit}}}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{
		vol("unlimited", "", nil), vol("memory", v1.StorageMediumMemory, &limit),
		vol("broken", "", &limit), vol("disk", "", &limit),
	}}}
	usage := map[string]int64{"unlimited": 1 << 30, "memory": 1 << 30, "disk": 1<<20 + 1}
	measured := map[string]bool{}
	measure := func(name string) (int64, error) {
		measured[name] = true
		if name == "broken" {
			return 0, errors.New("unreadable")
		}
		return usage[name], nil
	}
	const want = `Usage of EmptyDir volume "disk" exceeds the limit "1Mi". `
	if got := emptyDirOverLimit(pod, measure); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if measured["unlimited"] || measured["memory"] {
		t.Errorf("measured %v: a volume without a limit or in memory needs no walk", measured)
	}
	usage["disk"] = 1 << 20 // at the limit is within it
	if got := emptyDirOverLimit(pod, measure); got != "" {
		t.Errorf("at the limit: %q, want no eviction", got)
	}
}
