package job

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/controlplane/jobindexes"
)

// tally is what one sync learns from the pods that finished since the
// last: the Job's status with them recorded as uncounted (and their
// indexes), the pods whose finalizer may go, and a FailJob rule's verdict.
type tally struct {
	release []*corev1.Pod
	failJob *batchv1.JobCondition
	changed bool
}

// tallyFinished adds the finished pods that still carry the finalizer to
// job.status.uncountedTerminatedPods (job is the sync's copy). A pod a
// podFailurePolicy rule ignores, or a second success of one index, is
// released without being counted.
func tallyFinished(job *batchv1.Job, v *view, finishing bool) tally {
	u := uncountedOf(job)
	completed, failedIx := indexSets(job)
	var t tally
	for _, pod := range v.pods {
		if !hasFinalizer(pod) {
			continue
		}
		if u.has(pod.UID) {
			t.release = append(t.release, pod)
			continue
		}
		ix, indexed := indexOf(pod, job)
		switch {
		case pod.Status.Phase == corev1.PodSucceeded:
			if isIndexed(job) && (!indexed || completed.Has(ix)) {
				t.release = append(t.release, pod)
				continue
			}
			u.succeeded.Insert(pod.UID)
			if indexed {
				completed.Insert(ix)
			}
		case isFailed(pod, job) || finishing && pod.DeletionTimestamp != nil:
			if isIndexed(job) && !indexed {
				t.release = append(t.release, pod)
				continue
			}
			action, cond := failureAction(job, pod)
			if action == batchv1.PodFailurePolicyActionIgnore {
				t.release = append(t.release, pod)
				continue
			}
			u.failed.Insert(pod.UID)
			if cond != nil && t.failJob == nil {
				t.failJob = cond
			}
			if indexed && (action == batchv1.PodFailurePolicyActionFailIndex || indexLimitReached(job, v, ix)) {
				failedIx.Insert(ix)
			}
		default:
			continue
		}
		t.release, t.changed = append(t.release, pod), true
	}
	if t.changed {
		u.store(job)
		storeIndexes(job, completed, failedIx)
	}
	return t
}

// indexLimitReached reports whether index ix has failed more often than
// its backoffLimitPerIndex allows.
func indexLimitReached(job *batchv1.Job, v *view, ix int32) bool {
	limit := job.Spec.BackoffLimitPerIndex
	return limit != nil && v.indexFailures[ix] > *limit
}

func storeIndexes(job *batchv1.Job, completed, failed sets.Set[int32]) {
	if !isIndexed(job) {
		return
	}
	job.Status.CompletedIndexes = jobindexes.Of(sets.List(completed)...).String()
	if job.Spec.BackoffLimitPerIndex != nil {
		job.Status.FailedIndexes = ptr.To(jobindexes.Of(sets.List(failed)...).String())
	}
}

// count moves the uncounted pods whose finalizer is gone (or that are
// gone) into the Job's counters.
func count(job *batchv1.Job, pods []*corev1.Pod) bool {
	u := uncountedOf(job)
	if u.succeeded.Len()+u.failed.Len() == 0 {
		return false
	}
	held := sets.New[types.UID]()
	for _, pod := range pods {
		if hasFinalizer(pod) {
			held.Insert(pod.UID)
		}
	}
	moved := false
	for _, set := range []struct {
		uids    sets.Set[types.UID]
		counter *int32
	}{{u.succeeded, &job.Status.Succeeded}, {u.failed, &job.Status.Failed}} {
		for uid := range set.uids {
			if !held.Has(uid) {
				set.uids.Delete(uid)
				*set.counter++
				moved = true
			}
		}
	}
	u.store(job)
	return moved
}

// removeFinalizers takes the tracking finalizer off pods; a pod gone is
// no error.
func (c *Controller) removeFinalizers(ctx context.Context, pods []*corev1.Pod) error {
	patch := controllers.MustJSON(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}}})
	var errs []error
	for _, pod := range pods {
		if !hasFinalizer(pod) {
			continue
		}
		_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove finalizer of pod %s: %w", pod.Name, err))
			continue
		}
		c.released.add(pod.UID, c.now())
		pod.Finalizers = slices.DeleteFunc(slices.Clone(pod.Finalizers), func(f string) bool { return f == batchv1.JobTrackingFinalizer })
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// failureAction is what the Job's podFailurePolicy says of a failed pod
// (Count when no rule matches), and the FailureTarget condition a FailJob
// rule sets.
func failureAction(job *batchv1.Job, pod *corev1.Pod) (batchv1.PodFailurePolicyAction, *batchv1.JobCondition) {
	policy := job.Spec.PodFailurePolicy
	if policy == nil || pod.Status.Phase != corev1.PodFailed {
		return batchv1.PodFailurePolicyActionCount, nil
	}
	for i, rule := range policy.Rules {
		msg, ok := ruleMatches(&rule, pod)
		if !ok {
			continue
		}
		msg = fmt.Sprintf("%s matching %s rule at index %d", msg, rule.Action, i)
		if rule.Action == batchv1.PodFailurePolicyActionFailJob {
			return rule.Action, &batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue,
				Reason: batchv1.JobReasonPodFailurePolicy, Message: msg}
		}
		return rule.Action, nil
	}
	return batchv1.PodFailurePolicyActionCount, nil
}

// ruleMatches reports whether a failed pod matches rule, saying how.
func ruleMatches(rule *batchv1.PodFailurePolicyRule, pod *corev1.Pod) (string, bool) {
	if r := rule.OnExitCodes; r != nil {
		for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 || r.ContainerName != nil && *r.ContainerName != cs.Name {
				continue
			}
			if slices.Contains(r.Values, t.ExitCode) == (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) {
				return fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d", cs.Name, pod.Namespace, pod.Name, t.ExitCode), true
			}
		}
	}
	for _, p := range rule.OnPodConditions {
		for _, c := range pod.Status.Conditions {
			if c.Type == p.Type && c.Status == p.Status {
				return fmt.Sprintf("Pod %s/%s has condition %s", pod.Namespace, pod.Name, c.Type), true
			}
		}
	}
	return "", false
}

// releasedTTL is how long a released pod is remembered at most (the
// informer shows the change long before).
const releasedTTL = 5 * time.Minute

// releasedPods are the pods whose tracking finalizer was removed, by
// UID, with when. A sync that lists such a pod from a cache that still
// shows the finalizer must not count it again.
type releasedPods struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func (r *releasedPods) add(uid types.UID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at[uid] = now
}

// settle takes the finalizer off the copies of released pods the cache
// still shows with it, and forgets those it shows without, and those
// remembered longer than releasedTTL.
func (r *releasedPods) settle(pods []*corev1.Pod, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.at) == 0 {
		return
	}
	for _, pod := range pods {
		if _, ok := r.at[pod.UID]; !ok {
			continue
		}
		if !hasFinalizer(pod) {
			delete(r.at, pod.UID)
			continue
		}
		pod.Finalizers = slices.DeleteFunc(slices.Clone(pod.Finalizers), func(f string) bool { return f == batchv1.JobTrackingFinalizer })
	}
	for uid, at := range r.at {
		if now.Sub(at) > releasedTTL {
			delete(r.at, uid)
		}
	}
}
