package replicaset

import (
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
