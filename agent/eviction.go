package agent

import v1 "k8s.io/api/core/v1"

// The kubelet's eviction reason and its condition on an evicted pod.
const (
	evictedReason        = "Evicted"
	terminationByKubelet = "TerminationByKubelet"
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

// evictionHost is the agent as the eviction manager sees it.
type evictionHost struct{ a *Agent }

func (h evictionHost) Running() []*v1.Pod { return h.a.pods.running() }

func (h evictionHost) EmptyDirPath(uid, volume string) string {
	return h.a.rt.EmptyDirPath(uid, volume)
}

// Evict records why the pod is evicted and syncs it, which fails it.
func (h evictionHost) Evict(pod *v1.Pod, message string) {
	h.a.evictions.Store(pod.UID, message)
	evictions.WithLabelValues(signalEmptyDirFull).Inc()
	h.a.pods.queue.Add(pod.UID)
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
