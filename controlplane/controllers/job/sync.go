package job

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

var everything = labels.Everything()

func (c *Controller) sync(ctx context.Context, key string) error {
	if podKey, ok := strings.CutPrefix(key, orphanPrefix); ok {
		return c.releaseOrphan(ctx, podKey)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.job(ns, name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return c.releaseStrays(ctx, ns, name, "")
	}
	if err != nil {
		return err
	}
	if err := c.releaseStrays(ctx, ns, name, job.UID); err != nil {
		return err
	}
	if !c.expectations.Satisfied(key) {
		return nil
	}
	pods, err := c.claimPods(ctx, job)
	if err != nil {
		return err
	}
	c.released.settle(pods, c.now())
	if job.DeletionTimestamp != nil {
		return c.removeFinalizers(ctx, pods)
	}
	return c.reconcile(ctx, job.DeepCopy(), pods)
}

// releaseStrays takes the finalizer off pods whose controller reference
// names the Job name of namespace ns but not its current UID (none when
// the Job is gone): no Job will count them.
func (c *Controller) releaseStrays(ctx context.Context, ns, name string, uid types.UID) error {
	pods, err := c.pods.Pods(ns).List(everything)
	if err != nil {
		return err
	}
	var strays []*corev1.Pod
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref != nil && ref.Kind == jobKind.Kind && ref.Name == name && ref.UID != uid && hasFinalizer(pod) {
			strays = append(strays, pod.DeepCopy())
		}
	}
	return c.removeFinalizers(ctx, strays)
}

// releaseOrphan takes the finalizer off a pod that no controller owns
// any more (its Job was deleted orphaning it) and no Job would adopt: no
// Job will count it.
func (c *Controller) releaseOrphan(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || metav1.GetControllerOfNoCopy(pod) != nil {
		return err
	}
	jobs, err := c.jobs.Jobs(ns).List(everything)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && j.DeletionTimestamp == nil && sel.Matches(labels.Set(pod.Labels)) {
			return nil // to be adopted
		}
	}
	return c.removeFinalizers(ctx, []*corev1.Pod{pod.DeepCopy()})
}

// claimPods adopts and releases pods so that the Job owns exactly those
// its selector matches, and returns copies of them.
func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	return controllers.ClaimPods(ctx, c.client, c.pods, c.owners, job, job.Spec.Selector, "job", func(ctx context.Context) (metav1.Object, error) {
		return c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	})
}

// reconcile is one round of a Job's life: count what finished, decide
// whether the Job has ended, run or stop pods accordingly, and report.
// job is the sync's own copy.
func (c *Controller) reconcile(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) error {
	now := c.now()
	orig := job.Status.DeepCopy()
	v := newView(job, pods)
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	t := tallyFinished(job, v, ending(job) != nil || isDone(job))
	if t.failJob != nil && ending(job) == nil {
		setCondition(job, *t.failJob, now)
		t.changed = true
	}
	if t.changed {
		// The pods are in the status before their finalizers go.
		var err error
		if job, err = c.writeStatus(ctx, job); err != nil {
			return err
		}
	}
	if err := c.removeFinalizers(ctx, t.release); err != nil {
		return err
	}
	count(job, pods)
	if isDone(job) {
		return c.report(ctx, job, orig, v)
	}
	c.decide(job, v, now)
	if err := c.runPods(ctx, job, v, now); err != nil {
		return err
	}
	c.finish(job, v, now)
	return c.report(ctx, job, orig, v)
}

// decide starts or resumes the Job's clock and sets its verdict once it
// has one.
func (c *Controller) decide(job *batchv1.Job, v *view, now time.Time) {
	suspended := ptr.Deref(job.Spec.Suspend, false)
	switch {
	case suspended && ending(job) == nil:
		if setCondition(job, batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended"}, now) {
			c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
		}
		return
	case condition(job, batchv1.JobSuspended) != nil:
		setCondition(job, batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, Reason: "JobResumed", Message: "Job resumed"}, now)
		c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
	case job.Status.StartTime == nil:
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
	}
	if ending(job) != nil {
		return
	}
	if cond := verdict(job, v, now); cond != nil {
		setCondition(job, *cond, now)
	} else if at, ok := deadline(job); ok {
		c.queue.AddAfter(keyOf(job.Namespace, job.Name), at.Sub(now))
	}
}

// runPods stops every pod of a Job that has its verdict, and otherwise
// creates or deletes pods as planned.
func (c *Controller) runPods(ctx context.Context, job *batchv1.Job, v *view, now time.Time) error {
	if ending(job) != nil {
		return c.deletePods(ctx, job, v.active)
	}
	p := planPods(job, v, now)
	if p.wait > 0 {
		c.queue.AddAfter(keyOf(job.Namespace, job.Name), p.wait)
	}
	return c.carryOut(ctx, job, v, p)
}

// finish turns the verdict into the Job's end once none of its pods runs
// or waits to be counted: Complete (with its completion time) or Failed.
func (c *Controller) finish(job *batchv1.Job, v *view, now time.Time) {
	end := ending(job)
	u := uncountedOf(job)
	if end == nil || len(v.active) > 0 || v.terminating > 0 || u.succeeded.Len()+u.failed.Len() > 0 {
		return
	}
	final := *end
	final.Type = batchv1.JobFailed
	if end.Type == batchv1.JobSuccessCriteriaMet {
		final.Type = batchv1.JobComplete
		job.Status.CompletionTime = ptr.To(metav1.NewTime(now))
		c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
	} else {
		c.recorder.Event(job, corev1.EventTypeWarning, end.Reason, end.Message)
	}
	setCondition(job, final, now)
}

// report writes the Job's counts of running pods and whatever else the
// sync changed in its status.
func (c *Controller) report(ctx context.Context, job *batchv1.Job, orig *batchv1.JobStatus, v *view) error {
	job.Status.Active = int32(len(v.active))
	job.Status.Ready = ptr.To(v.ready)
	job.Status.Terminating = ptr.To(v.terminating)
	if isDone(job) {
		job.Status.Active, job.Status.Ready = 0, ptr.To[int32](0)
	}
	if apiequality.Semantic.DeepEqual(&job.Status, orig) {
		return nil
	}
	_, err := c.writeStatus(ctx, job)
	return err
}

func (c *Controller) writeStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	written, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.written.Mutation(written)
	return written, nil
}

// job is the newest of the cached Job and the one this controller last
// wrote.
func (c *Controller) job(ns, name string) (*batchv1.Job, error) {
	obj, ok, err := c.written.GetByKey(keyOf(ns, name))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(batchv1.Resource("jobs"), name)
	}
	return obj.(*batchv1.Job), nil
}
