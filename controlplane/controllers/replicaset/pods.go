package replicaset

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod state as the controller reads it.

// isPodActive reports whether a pod still counts as a replica: not
// finished and not being deleted.
func isPodActive(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
}

// isPodTerminating reports whether a pod is being deleted but still runs.
func isPodTerminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// isPodReady reports whether the pod's Ready condition is True.
func isPodReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// readySince is when a ready pod became ready; zero when unknown or not
// ready.
func readySince(pod *corev1.Pod) time.Time {
	if c := readyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// availableAt is when a ready pod becomes available, minReadySeconds after
// it became ready. ok is false for a pod that is not ready, or ready since
// an unknown time while minReadySeconds is set: it never becomes available.
func availableAt(pod *corev1.Pod, minReadySeconds int32) (at time.Time, ok bool) {
	if !isPodReady(pod) {
		return time.Time{}, false
	}
	if minReadySeconds == 0 {
		return time.Time{}, true
	}
	since := readySince(pod)
	if since.IsZero() {
		return time.Time{}, false
	}
	return since.Add(time.Duration(minReadySeconds) * time.Second), true
}

// isPodAvailable reports whether the pod has been ready for at least
// minReadySeconds at now.
func isPodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	at, ok := availableAt(pod, minReadySeconds)
	return ok && !now.Before(at)
}
