// Package ttlafterfinished deletes finished Jobs once their
// spec.ttlSecondsAfterFinished has passed, with their pods, as
// kube-controller-manager's TTL-after-finished controller does.
package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "ttlafterfinished"
	workers        = 2
)

// Controller deletes expired Jobs; its queue holds Job keys.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	queue  workqueue.TypedRateLimitingInterface[string]
	now    func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	jobs := cc.Informers.Batch().V1().Jobs()
	c := &Controller{client: cc.Client, jobs: jobs.Lister(), queue: component.NewQueue(controllerName), now: time.Now}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(informer.Handler{Name: "job", Informer: jobs.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }}})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run deletes expired Jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	left, ok := c.timeLeft(job)
	switch {
	case !ok:
		return nil
	case left > 0:
		c.queue.AddAfter(key, left)
		return nil
	}
	// The cache may be behind a change of the TTL: decide on the latest.
	fresh, err := c.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if left, ok := c.timeLeft(fresh); !ok || left > 0 {
		c.queue.Add(key)
		return nil
	}
	err = c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete expired job %s: %w", key, err)
	}
	return nil
}

// timeLeft is how long until a finished Job with a TTL expires; ok is
// false for a Job without a TTL, not finished or already being deleted.
func (c *Controller) timeLeft(job *batchv1.Job) (time.Duration, bool) {
	ttl := job.Spec.TTLSecondsAfterFinished
	if ttl == nil || job.DeletionTimestamp != nil {
		return 0, false
	}
	for _, cond := range job.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			expires := cond.LastTransitionTime.Add(time.Duration(*ttl) * time.Second)
			return max(0, expires.Sub(c.now())), true
		}
	}
	return 0, false
}
