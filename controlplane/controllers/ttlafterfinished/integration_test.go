package ttlafterfinished_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestFinishedJobExpires: a Job with ttlSecondsAfterFinished goes, with
// its pod, that long after it completed; one without stays.
func TestFinishedJobExpires(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	for name, ttl := range map[string]*int32{"short": ptr.To[int32](1), "kept": nil} {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}}}
		if _, err := c.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pod string
		servertest.Eventually(t, "the pod of "+name, 30*time.Second, func(ctx context.Context) (bool, string) {
			pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
			if err != nil || len(pods.Items) != 1 {
				return false, fmt.Sprint(err)
			}
			pod = pods.Items[0].Name
			return true, ""
		})
		servertest.UpdatePodStatus(t, c, "default", pod, func(st *corev1.PodStatus) { st.Phase = corev1.PodSucceeded })
	}
	servertest.Eventually(t, "the short-lived Job gone", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := c.BatchV1().Jobs("default").Get(ctx, "short", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	servertest.Eventually(t, "the Job without a TTL complete and kept", 30*time.Second, func(ctx context.Context) (bool, string) {
		kept, err := c.BatchV1().Jobs("default").Get(ctx, "kept", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range kept.Status.Conditions {
			if cond.Type == batchv1.JobComplete {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", kept.Status)
	})
}
