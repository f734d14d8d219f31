package servertest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// UpdatePodStatus edits a pod's status through pods/status, as an agent
// would, retrying when another writer (the scheduler reporting the pod
// unschedulable) got there first.
func UpdatePodStatus(t testing.TB, c kubernetes.Interface, ns, name string, edit func(*corev1.PodStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := c.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(&pod.Status)
		_, err = c.CoreV1().Pods(ns).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update status of pod %s/%s: %v", ns, name, err)
	}
}

// SetPodRunning marks a pod Running with ip (none when empty) and its Ready
// condition as ready says, as an agent would.
func SetPodRunning(t testing.TB, c kubernetes.Interface, ns, name, ip string, ready bool) {
	t.Helper()
	UpdatePodStatus(t, c, ns, name, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		if ip != "" {
			st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	})
}
