package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
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
			return 0, fmt.Errorf("unreadable")
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

// fakePods holds one running pod whose emptyDir volumes are directories
// under dir, and records evictions.
type fakePods struct {
	pod     *v1.Pod
	dir     string
	evicted chan string
}

func (f *fakePods) Running() []*v1.Pod { return []*v1.Pod{f.pod} }

func (f *fakePods) EmptyDirPath(_, volume string) string { return filepath.Join(f.dir, volume) }

func (f *fakePods) Evict(_ *v1.Pod, message string) { f.evicted <- message }

func TestWatchVolumeUsageEvicts(t *testing.T) {
	limit := resource.MustParse("1Ki")
	pods := &fakePods{dir: t.TempDir(), evicted: make(chan string, 1), pod: &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}},
	}}}}
	if err := os.MkdirAll(filepath.Join(pods.dir, "scratch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pods.dir, "scratch", "big"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { WatchVolumeUsage(ctx, clk, pods); close(done) }()
	defer func() { cancel(); <-done }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(CheckPeriod)
	select {
	case msg := <-pods.evicted:
		if want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Ki". `; msg != want {
			t.Errorf("evicted with %q, want %q", msg, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no eviction within 10 s of the check period passing")
	}
}
