package job_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// These tests run the whole control plane without nodes: they play the
// agent, moving the Job's pods to Succeeded or Failed.

const wait = 30 * time.Second

type fixture struct {
	t  *testing.T
	c  kubernetes.Interface
	ns string
}

func newFixture(t *testing.T, c kubernetes.Interface, ns string) *fixture {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, c: c, ns: ns}
}

func (f *fixture) create(name string, edit func(*batchv1.Job)) *batchv1.Job {
	f.t.Helper()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}}}
	if edit != nil {
		edit(j)
	}
	j, err := f.c.BatchV1().Jobs(f.ns).Create(f.t.Context(), j, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// runningPods waits until the Job has n pods not finished and returns
// them.
func (f *fixture) runningPods(job string, n int) []corev1.Pod {
	f.t.Helper()
	var pods []corev1.Pod
	servertest.Eventually(f.t, fmt.Sprintf("%d running pods of %s", n, job), wait, func(ctx context.Context) (bool, string) {
		list, err := f.c.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil {
			return false, err.Error()
		}
		pods = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil
		})
		return len(pods) == n, fmt.Sprintf("%d pods", len(pods))
	})
	return pods
}

// finish ends a pod's main container with exit code code, as an agent
// reports it.
func (f *fixture) finish(pod corev1.Pod, code int32) {
	f.t.Helper()
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	servertest.UpdatePodStatus(f.t, f.c, f.ns, pod.Name, func(st *corev1.PodStatus) {
		st.Phase = phase
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.Now()}}}}
	})
}

// waitCondition waits for the Job's condition t to be True and returns
// the Job.
func (f *fixture) waitCondition(name string, t batchv1.JobConditionType) *batchv1.Job {
	f.t.Helper()
	var job *batchv1.Job
	servertest.Eventually(f.t, name+" "+string(t), wait, func(ctx context.Context) (bool, string) {
		var err error
		if job, err = f.c.BatchV1().Jobs(f.ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		for _, c := range job.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", job.Status)
	})
	return job
}

// TestJobRunsToCompletion: a Job runs parallelism pods at a time until
// completions succeeded, counting each pod once through its finalizer.
func TestJobRunsToCompletion(t *testing.T) {
	s := servertest.Start(t)
	f := newFixture(t, s.Client(), "complete")
	f.create("pi", func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](2) })
	pods := f.runningPods("pi", 2)
	for _, p := range pods {
		if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) || metav1.GetControllerOf(&p) == nil {
			t.Fatalf("pod %s: finalizers %v, owners %v", p.Name, p.Finalizers, p.OwnerReferences)
		}
		f.finish(p, 0)
	}
	last := f.runningPods("pi", 1)
	f.finish(last[0], 0)
	job := f.waitCondition("pi", batchv1.JobComplete)
	if job.Status.Succeeded != 3 || job.Status.CompletionTime == nil || job.Status.Active != 0 {
		t.Errorf("completed job status %+v", job.Status)
	}
	list, err := f.c.CoreV1().Pods(f.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if len(p.Finalizers) > 0 {
			t.Errorf("pod %s still held by %v", p.Name, p.Finalizers)
		}
	}
}

// TestJobFailures: past its backoffLimit a Job fails; a FailJob rule of
// its podFailurePolicy fails it at once, naming the container and exit
// code; an Ignore rule does not count the failure.
func TestJobFailures(t *testing.T) {
	s := servertest.Start(t)
	f := newFixture(t, s.Client(), "failures")
	f.create("strict", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) })
	f.finish(f.runningPods("strict", 1)[0], 1)
	job := f.waitCondition("strict", batchv1.JobFailed)
	if c := job.Status.Conditions; job.Status.Failed != 1 || c[len(c)-1].Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Errorf("failed job status %+v", job.Status)
	}

	f.create("policy", func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{7}}},
			{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		}}
	})
	f.finish(f.runningPods("policy", 1)[0], 7)
	f.finish(f.runningPods("policy", 1)[0], 42)
	job = f.waitCondition("policy", batchv1.JobFailed)
	want := "matching FailJob rule at index 1"
	if c := job.Status.Conditions[len(job.Status.Conditions)-1]; c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, want) || job.Status.Failed != 1 {
		t.Errorf("job failed by its policy: %+v, want reason PodFailurePolicy, %q, one failure counted", job.Status, want)
	}
}

// TestIndexedJob: each pod of an Indexed Job carries its index (label,
// annotation, hostname, JOB_COMPLETION_INDEX), and the Job completes once
// every index has succeeded.
func TestIndexedJob(t *testing.T) {
	s := servertest.Start(t)
	f := newFixture(t, s.Client(), "indexed")
	f.create("ix", func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
	})
	seen := map[string]bool{}
	for _, p := range f.runningPods("ix", 3) {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		env := p.Spec.Containers[0].Env
		if seen[ix] || p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "ix-"+ix ||
			len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" {
			t.Errorf("pod %s: index %q, labels %v, hostname %q, env %+v", p.Name, ix, p.Labels, p.Spec.Hostname, env)
		}
		seen[ix] = true
		f.finish(p, 0)
	}
	job := f.waitCondition("ix", batchv1.JobComplete)
	if job.Status.CompletedIndexes != "0-2" || job.Status.Succeeded != 3 {
		t.Errorf("indexed job status %+v", job.Status)
	}
}

// TestSuspendedJob: a suspended Job runs no pod until it is resumed.
func TestSuspendedJob(t *testing.T) {
	s := servertest.Start(t)
	f := newFixture(t, s.Client(), "suspend")
	f.create("later", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	job := f.waitCondition("later", batchv1.JobSuspended)
	if job.Status.StartTime != nil || job.Status.Active != 0 {
		t.Errorf("suspended job status %+v", job.Status)
	}
	job.Spec.Suspend = ptr.To(false)
	if _, err := f.c.BatchV1().Jobs(f.ns).Update(t.Context(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.finish(f.runningPods("later", 1)[0], 0)
	f.waitCondition("later", batchv1.JobComplete)
}

// TestDeletedJobLetsGoOfItsPods: a batch/v1 Job deleted without a
// propagation policy orphans its pods, as kube-apiserver's does, and the
// controller takes its finalizer off them; deleted in the background, its
// pods go with it.
func TestDeletedJobLetsGoOfItsPods(t *testing.T) {
	s := servertest.Start(t)
	f := newFixture(t, s.Client(), "deleted")
	for _, policy := range []*metav1.DeletionPropagation{nil, ptr.To(metav1.DeletePropagationBackground)} {
		name := "orphaning"
		if policy != nil {
			name = "background"
		}
		f.create(name, nil)
		pod := f.runningPods(name, 1)[0]
		if err := f.c.BatchV1().Jobs(f.ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
			t.Fatal(err)
		}
		servertest.Eventually(t, name+"'s pod let go", wait, func(ctx context.Context) (bool, string) {
			p, err := f.c.CoreV1().Pods(f.ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if policy != nil {
				return err != nil || p.DeletionTimestamp != nil && len(p.Finalizers) == 0, fmt.Sprintf("%v %v", err, p.Finalizers)
			}
			if err != nil {
				return false, err.Error()
			}
			return len(p.OwnerReferences) == 0 && len(p.Finalizers) == 0 && p.DeletionTimestamp == nil,
				fmt.Sprintf("owners %v, finalizers %v", p.OwnerReferences, p.Finalizers)
		})
	}
}
