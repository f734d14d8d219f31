package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/agent/volumes"
)

// The kubelet's eviction reason and its condition on an evicted pod.
const (
	evictedReason          = "Evicted"
	terminationByKubelet   = "TerminationByKubelet"
	emptyDirOverLimitFmt   = "Usage of EmptyDir volume %q exceeds the limit %q. "
	volumeUsageCheckPeriod = 10 * time.Second // the kubelet's eviction monitoring period
)

// podFailure is why the agent fails a whole pod: its containers are
// stopped and it is reported Failed with this reason and message.
type podFailure struct {
	eventType, reason, message string
	evicted                    bool // stopped at once, with a DisruptionTarget condition
}

func deadlineFailure() *podFailure {
	return &podFailure{eventType: v1.EventTypeNormal, reason: "DeadlineExceeded", message: deadlineMessage}
}

func evictionFailure(message string) *podFailure {
	return &podFailure{eventType: v1.EventTypeWarning, reason: evictedReason, message: message, evicted: true}
}

// podFailure says whether the pod has failed as a whole: evicted (now or
// before; an eviction is final) or past its activeDeadlineSeconds. A pod
// being deleted is just stopped.
func (s *podSync) podFailure() *podFailure {
	if s.pod.DeletionTimestamp != nil {
		return nil
	}
	if st := s.pod.Status; st.Phase == v1.PodFailed && st.Reason == evictedReason {
		return evictionFailure(st.Message)
	}
	if msg, ok := s.a.evictions.Load(s.pod.UID); ok {
		return evictionFailure(msg.(string))
	}
	if s.pastDeadline() {
		return deadlineFailure()
	}
	return nil
}

// watchVolumeUsage measures the disk emptyDir volumes that have a
// sizeLimit every volumeUsageCheckPeriod and evicts the pods using more, as
// the kubelet's eviction manager does. (A memory-medium emptyDir is a tmpfs
// of that size, which cannot hold more.)
func (a *Agent) watchVolumeUsage(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(volumeUsageCheckPeriod):
		}
		for _, pod := range a.pods.running() {
			msg := emptyDirOverLimit(pod, func(volume string) (int64, error) {
				return volumes.DiskUsage(a.rt.EmptyDirPath(string(pod.UID), volume))
			})
			if msg != "" {
				slog.Info("evicting pod", "pod", pod.Name, "namespace", pod.Namespace, "why", msg)
				a.evictions.Store(pod.UID, msg)
				a.pods.queue.Add(pod.UID)
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

// running is a snapshot of the pods that are neither being deleted nor
// finished.
func (w *podWorkers) running() []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*v1.Pod
	for _, pod := range w.pods {
		if pod.DeletionTimestamp == nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
			out = append(out, pod)
		}
	}
	return out
}
