package job

import (
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/controlplane/jobindexes"
)

// view is what one sync sees of a Job's pods.
type view struct {
	job         *batchv1.Job
	pods        []*corev1.Pod
	active      []*corev1.Pod // neither finished nor being deleted
	terminating int32         // being deleted, not finished
	ready       int32         // active and Ready
	restarts    int32         // container restarts of active pods
	lastFailure time.Time     // when the latest failed pod failed
	// indexFailures is, per index, how often its pods failed (an Indexed
	// Job's pods carry the count of their index's earlier failures).
	indexFailures map[int32]int32
}

func newView(job *batchv1.Job, pods []*corev1.Pod) *view {
	v := &view{job: job, pods: pods, indexFailures: map[int32]int32{}}
	for _, pod := range pods {
		switch {
		case isFinished(pod):
			if pod.Status.Phase == corev1.PodFailed {
				v.failedAt(pod)
			}
		case pod.DeletionTimestamp != nil:
			v.terminating++
		default:
			v.active = append(v.active, pod)
			if controllers.IsPodReady(pod) {
				v.ready++
			}
			v.restarts += restartsOf(pod)
		}
		if ix, ok := indexOf(pod, job); ok {
			if n := failureCountOf(pod); n > v.indexFailures[ix] {
				v.indexFailures[ix] = n
			}
		}
	}
	return v
}

// failedAt notes when a failed pod failed: its containers' last end, or
// its deletion.
func (v *view) failedAt(pod *corev1.Pod) {
	at := time.Time{}
	if pod.DeletionTimestamp != nil {
		at = pod.DeletionTimestamp.Time
	}
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(at) {
			at = t.FinishedAt.Time
		}
	}
	if at.After(v.lastFailure) {
		v.lastFailure = at
	}
}

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// isFailed reports whether a pod counts as failed: failed, or (unless the
// Job replaces only failed pods) being deleted before it succeeded.
func isFailed(pod *corev1.Pod, job *batchv1.Job) bool {
	if pod.Status.Phase == corev1.PodFailed {
		return true
	}
	if ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed {
		return false
	}
	return pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded
}

func restartsOf(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		n += cs.RestartCount
	}
	return n
}

func hasFinalizer(pod *corev1.Pod) bool {
	for _, f := range pod.Finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return true
		}
	}
	return false
}

func isIndexed(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

// indexOf is an Indexed Job's pod's completion index, when it has a
// valid one.
func indexOf(pod *corev1.Pod, job *batchv1.Job) (int32, bool) {
	if !isIndexed(job) {
		return 0, false
	}
	n, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil || n < 0 || n >= int(ptr.Deref(job.Spec.Completions, 0)) {
		return 0, false
	}
	return int32(n), true
}

// failureCountOf is how often the pod's index had failed, this pod
// included.
func failureCountOf(pod *corev1.Pod) int32 {
	n, _ := strconv.Atoi(pod.Annotations[batchv1.JobIndexFailureCountAnnotation])
	if pod.Status.Phase == corev1.PodFailed {
		n++
	}
	return int32(n)
}

// uncounted is status.uncountedTerminatedPods as sets.
type uncounted struct{ succeeded, failed sets.Set[types.UID] }

func uncountedOf(job *batchv1.Job) uncounted {
	u := uncounted{sets.New[types.UID](), sets.New[types.UID]()}
	if p := job.Status.UncountedTerminatedPods; p != nil {
		u.succeeded.Insert(p.Succeeded...)
		u.failed.Insert(p.Failed...)
	}
	return u
}

func (u uncounted) has(uid types.UID) bool { return u.succeeded.Has(uid) || u.failed.Has(uid) }

func (u uncounted) store(job *batchv1.Job) {
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{
		Succeeded: sets.List(u.succeeded), Failed: sets.List(u.failed)}
}

// indexSets reads status.completedIndexes and status.failedIndexes.
func indexSets(job *batchv1.Job) (completed, failed sets.Set[int32]) {
	completions := ptr.Deref(job.Spec.Completions, 0)
	completed, failed = sets.New[int32](), sets.New[int32]()
	for s, into := range map[string]sets.Set[int32]{job.Status.CompletedIndexes: completed, ptr.Deref(job.Status.FailedIndexes, ""): failed} {
		set, _ := jobindexes.Parse(s, completions)
		for _, iv := range set {
			for i := iv.First; i <= iv.Last; i++ {
				into.Insert(i)
			}
		}
	}
	return completed, failed
}
