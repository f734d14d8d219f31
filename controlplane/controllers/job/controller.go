// Package job runs Jobs to completion as kube-controller-manager's Job
// controller does. It creates a Job's pods from its template (up to
// spec.parallelism at once, each Indexed pod with its completion index),
// counts the pods that finish, replaces failed ones after an exponential
// back-off, and ends the Job Complete once enough pods succeeded (or its
// successPolicy is met) or Failed once it exceeds its backoffLimit, its
// activeDeadlineSeconds, its failed-index limits or a FailJob rule of its
// podFailurePolicy; a suspended Job has no running pods.
//
// Every pod carries the batch.kubernetes.io/job-tracking finalizer until
// the Job has counted it: a finished pod is first recorded in
// status.uncountedTerminatedPods, then its finalizer is removed, then it
// moves into the Job's counters, so that no pod is counted twice or lost
// when the controller, the server or the pod's node goes away between the
// steps.
package job

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "job"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "job-controller"
	// workers is kube-controller-manager's --concurrent-job-syncs.
	workers = 5
	// backoffBase and backoffMax bound the delay before a failed pod is
	// replaced: 10 s, doubling with each failure, at most 6 minutes.
	backoffBase = 10 * time.Second
	backoffMax  = 6 * time.Minute
	// writtenJobs bounds how many written Jobs are kept until the
	// informer has them.
	writtenJobs = 10000
)

var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// orphanPrefix marks the queue keys of held pods without a controller.
const orphanPrefix = "orphan:"

// Controller is the Job control loop; its queue holds Job keys.
type Controller struct {
	client       kubernetes.Interface
	jobs         batchlisters.JobLister
	pods         corelisters.PodLister
	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllers.Expectations
	// written is the Job cache with the statuses this controller wrote
	// laid over it until the informer has them: a sync that read an older
	// status would miss pods it has counted (their finalizers gone) and
	// make new ones in their place.
	written cache.MutationCache
	// released are the pods whose finalizer this controller took off
	// (they are counted) until the pod informer shows it gone.
	released *releasedPods
	owners   controllers.Owners[*batchv1.Job]
	now      func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the Job controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	jobs := cc.Informers.Batch().V1().Jobs()
	pods := cc.Informers.Core().V1().Pods()
	c := &Controller{
		client:       cc.Client,
		jobs:         jobs.Lister(),
		pods:         pods.Lister(),
		recorder:     cc.Recorder(eventSource),
		queue:        component.NewQueue(controllerName),
		expectations: controllers.NewExpectations(time.Now),
		written: cache.NewIntegerResourceVersionMutationCacheWithOptions(klog.Background(), jobs.Informer().GetStore(),
			cache.MutationCacheOptions{MaxCacheSize: writtenJobs}),
		released: &releasedPods{at: map[types.UID]time.Time{}},
		now:      time.Now,
	}
	c.owners = controllers.Owners[*batchv1.Job]{
		Kind:     jobKind,
		Get:      func(ns, name string) (*batchv1.Job, error) { return c.jobs.Jobs(ns).Get(name) },
		List:     func(ns string) ([]*batchv1.Job, error) { return c.jobs.Jobs(ns).List(everything) },
		Selector: func(j *batchv1.Job) *metav1.LabelSelector { return j.Spec.Selector },
		Wake:     func(j *batchv1.Job) { c.queue.Add(keyOf(j.Namespace, j.Name)) },
	}
	err := informer.AddHandlers(
		informer.Handler{Name: "job", Informer: jobs.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.jobChanged, UpdateFunc: func(_, cur any) { c.jobChanged(cur) }, DeleteFunc: c.jobDeleted}},
		informer.Handler{Name: "pod", Informer: pods.Informer(),
			Funcs: controllers.OwnedPods[*batchv1.Job]{Owners: c.owners, Expectations: c.expectations, Also: c.wakeFor}.Handlers()},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs Jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

func (c *Controller) jobChanged(obj any) {
	if j, ok := obj.(*batchv1.Job); ok {
		c.queue.Add(keyOf(j.Namespace, j.Name))
	}
}

func (c *Controller) jobDeleted(obj any) {
	if j, ok := informer.FromTombstone[*batchv1.Job](obj); ok {
		key := keyOf(j.Namespace, j.Name)
		c.expectations.Forget(key)
		c.queue.Add(key)
	}
}

// wakeFor queues the Job a held pod's controller reference names,
// whether or not it is still there: a Job that is gone releases the
// finalizers of its pods. A held pod no Job controls any more (orphaned
// by its Job's deletion) is queued by itself.
func (c *Controller) wakeFor(pod *corev1.Pod) {
	if !hasFinalizer(pod) {
		return
	}
	switch ref := metav1.GetControllerOfNoCopy(pod); {
	case ref == nil:
		c.queue.Add(orphanPrefix + keyOf(pod.Namespace, pod.Name))
	case ref.Kind == jobKind.Kind:
		c.queue.Add(keyOf(pod.Namespace, ref.Name))
	}
}
