// Package eviction is the agent's eviction manager, as the kubelet's: it
// finds the pods that use more than their limits allow and tells the
// agent to evict them. Today that is a disk emptyDir volume over its
// sizeLimit (a memory-medium emptyDir is a tmpfs of that size, which
// cannot hold more). Failing the pod is the agent's.
package eviction

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/agent/volumes"
)

// CheckPeriod is how often usage is measured (the kubelet's eviction
// monitoring period).
const CheckPeriod = 10 * time.Second

const emptyDirOverLimitFmt = "Usage of EmptyDir volume %q exceeds the limit %q. "

// Pods is what the manager needs of the agent.
type Pods interface {
	// Running is a snapshot of the pods neither being deleted nor finished.
	Running() []*v1.Pod
	// EmptyDirPath is where a pod's emptyDir volume lives on the node.
	EmptyDirPath(uid, volume string) string
	// Evict fails pod with message, as evicted.
	Evict(pod *v1.Pod, message string)
}

// WatchVolumeUsage measures the disk emptyDir volumes that have a
// sizeLimit every CheckPeriod and evicts the pods using more, until ctx
// ends.
func WatchVolumeUsage(ctx context.Context, clk clock.Clock, pods Pods) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(CheckPeriod):
		}
		for _, pod := range pods.Running() {
			msg := emptyDirOverLimit(pod, func(volume string) (int64, error) {
				return volumes.DiskUsage(pods.EmptyDirPath(string(pod.UID), volume))
			})
			if msg != "" {
				slog.Info("evicting pod", "pod", pod.Name, "namespace", pod.Namespace, "why", msg)
				pods.Evict(pod, msg)
			}
		}
	}
}

// emptyDirOverLimit is the eviction message for the first disk emptyDir of
// pod whose usage exceeds its sizeLimit, or "".
func emptyDirOverLimit(pod *v1.Pod, usage func(volume string) (int64, error)) string {
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 || ed.Medium == v1.StorageMediumMemory {
			continue
		}
		used, err := usage(vol.Name)
		if err != nil {
			slog.Warn("measure emptyDir", "pod", pod.Name, "namespace", pod.Namespace, "volume", vol.Name, "err", err)
			continue
		}
		if used > ed.SizeLimit.Value() {
			return fmt.Sprintf(emptyDirOverLimitFmt, vol.Name, ed.SizeLimit.String())
		}
	}
	return ""
}
