package cronjob

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/cronschedule"
)

// ownedJobs are the Jobs cj controls.
func ownedJobs(cj *batchv1.CronJob, jobs []*batchv1.Job) []*batchv1.Job {
	var owned []*batchv1.Job
	for _, j := range jobs {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.UID == cj.UID {
			owned = append(owned, j)
		}
	}
	return owned
}

func finished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

// trackJobs sets status.active to the owned Jobs still running and
// status.lastSuccessfulTime to the latest completion.
func trackJobs(cj *batchv1.CronJob, owned []*batchv1.Job) {
	var active []corev1.ObjectReference
	for _, j := range owned {
		cond, done := finished(j)
		switch {
		case !done:
			active = append(active, refTo(j))
		case cond == batchv1.JobComplete && j.Status.CompletionTime != nil:
			if last := cj.Status.LastSuccessfulTime; last == nil || last.Before(j.Status.CompletionTime) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
			}
		}
	}
	slices.SortFunc(active, func(a, b corev1.ObjectReference) int { return cmp.Compare(a.Name, b.Name) })
	cj.Status.Active = active
}

func refTo(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, APIVersion: batchv1.SchemeGroupVersion.String()}
}

// pruneHistory deletes the oldest finished Jobs beyond the history
// limits, succeeded and failed each.
func (c *Controller) pruneHistory(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job) error {
	byCond := map[batchv1.JobConditionType][]*batchv1.Job{}
	for _, j := range owned {
		if cond, done := finished(j); done && j.DeletionTimestamp == nil {
			byCond[cond] = append(byCond[cond], j)
		}
	}
	limits := map[batchv1.JobConditionType]int32{batchv1.JobComplete: ptr.Deref(cj.Spec.SuccessfulJobsHistoryLimit, 3),
		batchv1.JobFailed: ptr.Deref(cj.Spec.FailedJobsHistoryLimit, 1)}
	for cond, jobs := range byCond {
		slices.SortFunc(jobs, func(a, b *batchv1.Job) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		for _, j := range jobs[:max(0, len(jobs)-int(limits[cond]))] {
			if err := c.deleteJob(ctx, cj, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteJob deletes a Job with its pods.
func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, j *batchv1.Job) error {
	err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return fmt.Errorf("delete job %s: %w", j.Name, err)
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %s", j.Name)
	return nil
}

// schedule starts the Job of the latest scheduled time due, if any, and
// returns the next scheduled time (zero when suspended or unparseable).
func (c *Controller) schedule(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job) (time.Time, error) {
	if ptr.Deref(cj.Spec.Suspend, false) || cj.DeletionTimestamp != nil {
		return time.Time{}, nil
	}
	sched, err := cronschedule.Parse(cj.Spec.Schedule)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return time.Time{}, nil
	}
	loc, err := cronschedule.Location(cj.Spec.TimeZone)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *cj.Spec.TimeZone, err)
		return time.Time{}, nil
	}
	now := c.now().In(loc)
	next := sched.Next(now)
	due, missed := latestDue(cj, sched, now)
	switch {
	case due.IsZero():
		return next, nil
	case missed > tooManyMissed:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && due.Add(time.Duration(*d)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", due.UTC().Format(time.RFC1123Z))
		return next, nil
	}
	return next, c.startJob(ctx, cj, owned, due)
}

// latestDue is the latest scheduled time after the last one started (or
// the CronJob's creation, or the starting deadline) up to now, and how
// many were missed; zero when none is due.
func latestDue(cj *batchv1.CronJob, sched interface{ Next(time.Time) time.Time }, now time.Time) (time.Time, int) {
	from := cj.CreationTimestamp.Time
	if last := cj.Status.LastScheduleTime; last != nil {
		from = last.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if earliest := now.Add(-time.Duration(*d) * time.Second); earliest.After(from) {
			from = earliest
		}
	}
	var due time.Time
	missed := 0
	for t := sched.Next(from.In(now.Location())); !t.After(now); t = sched.Next(t) {
		due, missed = t, missed+1
		if missed > 10*tooManyMissed {
			break // bounded: only the latest matters
		}
	}
	return due, missed
}

// startJob creates the Job of scheduled time due, minding the CronJob's
// concurrencyPolicy about the Jobs still running.
func (c *Controller) startJob(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job, due time.Time) error {
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			return nil // its time passes; the next one is tried when due
		}
	case batchv1.ReplaceConcurrent:
		for _, j := range owned {
			if _, done := finished(j); !done {
				if err := c.deleteJob(ctx, cj, j); err != nil {
					return err
				}
			}
		}
		cj.Status.Active = nil
	}
	job := jobFor(cj, due)
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync whose status write failed.
		existing, getErr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if ref := metav1.GetControllerOfNoCopy(existing); ref == nil || ref.UID != cj.UID {
			return fmt.Errorf("job %s exists and is not the CronJob's", job.Name)
		}
		created = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return fmt.Errorf("create job %s: %w", job.Name, err)
	default:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %s", created.Name)
	}
	if !slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == created.UID }) {
		cj.Status.Active = append(cj.Status.Active, refTo(created))
	}
	cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(due))
	return nil
}

// jobFor is the Job of cj's template for scheduled time t, named after
// the CronJob and t's minute since the epoch.
func jobFor(cj *batchv1.CronJob, t time.Time) *batchv1.Job {
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	job := &batchv1.Job{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	job.Name, job.Namespace = cj.Name+"-"+strconv.FormatInt(t.Unix()/60, 10), cj.Namespace
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[scheduledAnnotation] = t.Format(time.RFC3339)
	job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)}
	return job
}

// writeStatus writes cj's status when the sync changed it.
func (c *Controller) writeStatus(ctx context.Context, cj *batchv1.CronJob, orig *batchv1.CronJobStatus) error {
	if apiequality.Semantic.DeepEqual(&cj.Status, orig) {
		return nil
	}
	if _, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	return nil
}
