package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod readiness as the owning controllers read it.

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// ReadySince is when a ready pod became ready; zero when unknown or not
// ready.
func ReadySince(pod *corev1.Pod) time.Time {
	if c := readyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// AvailableAt is when a ready pod becomes available, minReadySeconds after
// it became ready. ok is false for a pod that is not ready, or ready since
// an unknown time while minReadySeconds is set: it never becomes available.
func AvailableAt(pod *corev1.Pod, minReadySeconds int32) (at time.Time, ok bool) {
	if !IsPodReady(pod) {
		return time.Time{}, false
	}
	if minReadySeconds == 0 {
		return time.Time{}, true
	}
	since := ReadySince(pod)
	if since.IsZero() {
		return time.Time{}, false
	}
	return since.Add(time.Duration(minReadySeconds) * time.Second), true
}

// IsPodAvailable reports whether the pod has been ready for at least
// minReadySeconds at now.
func IsPodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	at, ok := AvailableAt(pod, minReadySeconds)
	return ok && !now.Before(at)
}
