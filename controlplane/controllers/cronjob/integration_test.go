package cronjob_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestCronJobStartsJobs: a CronJob due starts a Job of its template,
// owned by it and stamped with its scheduled time, and lists it as active.
func TestCronJobStartsJobs(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	cj, err := c.BatchV1().CronJobs("default").Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{Schedule: "@every 1s", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "a Job of the CronJob, listed active", 30*time.Second, func(ctx context.Context) (bool, string) {
		jobs, err := c.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		got, err := c.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs.Items {
			ref := metav1.GetControllerOf(&j)
			if ref == nil || ref.UID != cj.UID || j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "" {
				continue
			}
			for _, a := range got.Status.Active {
				if a.UID == j.UID && got.Status.LastScheduleTime != nil {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d jobs, status %+v", len(jobs.Items), got.Status)
	})
}
