package job

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

const (
	// burst caps the pods one sync creates.
	burst = 500
	// indexEnv is the variable that tells an Indexed Job's pod its index.
	indexEnv = "JOB_COMPLETION_INDEX"
)

// plan is what one sync does about a running Job's pods: create pods
// (with these indexes, for an Indexed Job), delete these, or wait.
type plan struct {
	create  int
	indexes []int32
	remove  []*corev1.Pod
	wait    time.Duration // until a failed pod may be replaced
}

// planPods compares the Job's active pods with what it wants running.
func planPods(job *batchv1.Job, v *view, now time.Time) plan {
	if ptr.Deref(job.Spec.Suspend, false) {
		return plan{remove: v.active}
	}
	active := v.active
	var p plan
	if isIndexed(job) {
		active, p.remove, p.indexes = planIndexes(job, v)
	}
	want := wantActive(job)
	switch n := int32(len(active)); {
	case n > want:
		p.remove = append(p.remove, newestFirst(active)[:n-want]...)
		p.indexes = nil
	case n < want:
		p.create = int(min(want-n, burst))
		if replacing := v.terminating > 0 && onlyFailed(job); replacing {
			p.create = int(max(0, int32(p.create)-v.terminating))
		}
		if isIndexed(job) {
			p.indexes = p.indexes[:min(len(p.indexes), p.create)]
			p.create = len(p.indexes)
		}
		if p.create > 0 {
			p.wait = backoffLeft(job, v, now)
		}
	default:
		p.indexes = nil
	}
	return p
}

func onlyFailed(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed
}

// wantActive is how many pods the Job runs at once: its parallelism, no
// more than the completions still missing.
func wantActive(job *batchv1.Job) int32 {
	want := ptr.Deref(job.Spec.Parallelism, 1)
	u := uncountedOf(job)
	succeeded := job.Status.Succeeded + int32(u.succeeded.Len())
	switch c := job.Spec.Completions; {
	case isIndexed(job):
		completed, failed := indexSets(job)
		return min(want, ptr.Deref(c, 0)-int32(completed.Len()+failed.Len()))
	case c != nil:
		return max(0, min(want, *c-succeeded))
	case succeeded > 0:
		return 0 // one success completes a Job without completions
	}
	return want
}

// planIndexes keeps one active pod per index still to run (the oldest),
// and lists the indexes no pod runs, lowest first.
func planIndexes(job *batchv1.Job, v *view) (keep, remove []*corev1.Pod, missing []int32) {
	completed, failed := indexSets(job)
	running := map[int32]bool{}
	for _, pod := range oldestFirst(v.active) {
		ix, ok := indexOf(pod, job)
		if !ok || running[ix] || completed.Has(ix) || failed.Has(ix) {
			remove = append(remove, pod)
			continue
		}
		running[ix] = true
		keep = append(keep, pod)
	}
	for ix := range ptr.Deref(job.Spec.Completions, 0) {
		if !running[ix] && !completed.Has(ix) && !failed.Has(ix) {
			missing = append(missing, ix)
		}
	}
	return keep, remove, missing
}

func oldestFirst(pods []*corev1.Pod) []*corev1.Pod {
	return slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
}

// newestFirst orders pods to delete: not yet running or not ready first,
// then the newest.
func newestFirst(pods []*corev1.Pod) []*corev1.Pod {
	rank := func(p *corev1.Pod) int {
		switch {
		case p.Spec.NodeName == "":
			return 0
		case !controllers.IsPodReady(p):
			return 1
		}
		return 2
	}
	return slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
}

// backoffLeft is how long the Job still waits before replacing a failed
// pod: backoffBase doubled for each failure, at most backoffMax, from the
// latest failure.
func backoffLeft(job *batchv1.Job, v *view, now time.Time) time.Duration {
	failures := job.Status.Failed + int32(uncountedOf(job).failed.Len())
	if failures == 0 || v.lastFailure.IsZero() {
		return 0
	}
	delay := backoffMax
	if failures < 16 {
		delay = min(backoffMax, backoffBase<<(failures-1))
	}
	return max(0, v.lastFailure.Add(delay).Sub(now))
}

// carryOut creates and deletes what p says, recording expectations.
func (c *Controller) carryOut(ctx context.Context, job *batchv1.Job, v *view, p plan) error {
	key := keyOf(job.Namespace, job.Name)
	if len(p.remove) > 0 {
		return c.deletePods(ctx, job, p.remove)
	}
	if p.create == 0 || p.wait > 0 {
		return nil
	}
	c.expectations.ExpectCreations(key, p.create)
	created, err := controllers.SlowStartBatch(p.create, 1, func(i int) error {
		ix := int32(-1)
		if p.indexes != nil {
			ix = p.indexes[i]
		}
		return c.createPod(ctx, job, v, ix)
	})
	if skipped := p.create - created; skipped > 0 {
		c.expectations.LowerCreations(key, skipped)
	}
	return err
}

func (c *Controller) deletePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) error {
	d := controllers.PodDeleter{Client: c.client, Recorder: c.recorder, Expectations: c.expectations}
	return d.Delete(ctx, job, keyOf(job.Namespace, job.Name), pods)
}

func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, v *view, ix int32) error {
	pod := podFor(job, ix, v.indexFailures[ix])
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return fmt.Errorf("create pod: %w", err)
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
	return nil
}

// podFor is a pod of the Job's template, owned by the Job and held by
// the tracking finalizer; an Indexed Job's pod (ix ≥ 0) carries its index
// (annotation, label, JOB_COMPLETION_INDEX, hostname) and how often the
// index failed before.
func podFor(job *batchv1.Job, ix, failures int32) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name, pod.Namespace, pod.GenerateName = "", job.Namespace, job.Name+"-"
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)}
	pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	if ix < 0 {
		return pod
	}
	index := strconv.Itoa(int(ix))
	pod.GenerateName = job.Name + "-" + index + "-"
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = index
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = index
	if job.Spec.BackoffLimitPerIndex != nil {
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
	}
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = job.Name + "-" + index
	}
	env := corev1.EnvVar{Name: indexEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			list[i].Env = append(list[i].Env, env)
		}
	}
	return pod
}
