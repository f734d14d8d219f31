package job

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/jobindexes"
)

// condition returns the Job's condition t when it is True.
func condition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// isDone reports whether the Job has ended, Complete or Failed.
func isDone(job *batchv1.Job) bool {
	return condition(job, batchv1.JobComplete) != nil || condition(job, batchv1.JobFailed) != nil
}

// ending is the condition that decided the Job's end, once one has:
// FailureTarget or SuccessCriteriaMet.
func ending(job *batchv1.Job) *batchv1.JobCondition {
	if c := condition(job, batchv1.JobFailureTarget); c != nil {
		return c
	}
	return condition(job, batchv1.JobSuccessCriteriaMet)
}

// setCondition sets condition c (its time now), changing the transition
// time only when its status changes; it reports whether anything changed.
func setCondition(job *batchv1.Job, c batchv1.JobCondition, now time.Time) bool {
	c.LastProbeTime, c.LastTransitionTime = metav1.NewTime(now), metav1.NewTime(now)
	for i := range job.Status.Conditions {
		old := &job.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return false
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return true
	}
	job.Status.Conditions = append(job.Status.Conditions, c)
	return true
}

// verdict decides whether the Job has now failed or succeeded: the
// FailureTarget or SuccessCriteriaMet condition to set, or nil.
func verdict(job *batchv1.Job, v *view, now time.Time) *batchv1.JobCondition {
	failed := func(reason, msg string) *batchv1.JobCondition {
		return &batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
	}
	u := uncountedOf(job)
	failures := job.Status.Failed + int32(u.failed.Len())
	succeeded := job.Status.Succeeded + int32(u.succeeded.Len())
	spec := &job.Spec
	switch {
	case spec.BackoffLimitPerIndex == nil && failures > ptr.Deref(spec.BackoffLimit, 6), restartsExceed(job, v):
		return failed(batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
	case pastDeadline(job, now):
		return failed(batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
	}
	if isIndexed(job) {
		return indexedVerdict(job, failed)
	}
	if c := spec.Completions; c != nil && succeeded >= *c || c == nil && succeeded > 0 && len(v.active) == 0 {
		return succeededBy(batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods")
	}
	return nil
}

// restartsExceed reports whether the containers of an OnFailure Job's
// running pods have restarted as often as its backoffLimit allows (at
// all, for a limit of 0).
func restartsExceed(job *batchv1.Job, v *view) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, 6)
	if limit == 0 {
		return v.restarts > 0
	}
	return v.restarts >= limit
}

func succeededBy(reason, msg string) *batchv1.JobCondition {
	return &batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
}

// indexedVerdict is the verdict of an Indexed Job's indexes: too many
// failed, all completed, a successPolicy rule met, or every index done
// with some failed.
func indexedVerdict(job *batchv1.Job, failed func(reason, msg string) *batchv1.JobCondition) *batchv1.JobCondition {
	completed, failedIx := indexSets(job)
	completions := ptr.Deref(job.Spec.Completions, 0)
	if m := job.Spec.MaxFailedIndexes; m != nil && int32(failedIx.Len()) > *m {
		return failed(batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes")
	}
	if p := job.Spec.SuccessPolicy; p != nil {
		for i, rule := range p.Rules {
			if ruleMet(&rule, completed.UnsortedList(), completions) {
				return succeededBy(batchv1.JobReasonSuccessPolicy, fmt.Sprintf("Matched rules at index %d", i))
			}
		}
	}
	switch done := int32(completed.Len() + failedIx.Len()); {
	case int32(completed.Len()) >= completions:
		return succeededBy(batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods")
	case failedIx.Len() > 0 && done >= completions:
		return failed(batchv1.JobReasonFailedIndexes, "Job has failed indexes")
	}
	return nil
}

// ruleMet reports whether the completed indexes meet a successPolicy
// rule: enough of them (succeededCount) among the named ones
// (succeededIndexes, all when unset).
func ruleMet(rule *batchv1.SuccessPolicyRule, completed []int32, completions int32) bool {
	var named jobindexes.Set
	if rule.SucceededIndexes != nil {
		named, _ = jobindexes.Parse(*rule.SucceededIndexes, completions)
	}
	n := int32(0)
	for _, i := range completed {
		if rule.SucceededIndexes == nil || named.Has(i) {
			n++
		}
	}
	if rule.SucceededCount != nil {
		return n >= *rule.SucceededCount
	}
	return n == named.Count()
}

// pastDeadline reports whether the Job has run longer than its
// activeDeadlineSeconds.
func pastDeadline(job *batchv1.Job, now time.Time) bool {
	at, ok := deadline(job)
	return ok && !now.Before(at)
}

func deadline(job *batchv1.Job) (time.Time, bool) {
	d, start := job.Spec.ActiveDeadlineSeconds, job.Status.StartTime
	if d == nil || start == nil || ptr.Deref(job.Spec.Suspend, false) {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*d) * time.Second), true
}
