// Package cronjob creates the Jobs of CronJobs at the times of their
// schedules, as kube-controller-manager's CronJob controller does: the
// latest scheduled time not yet started (and not past
// startingDeadlineSeconds) gets a Job named after the CronJob and that
// minute; concurrencyPolicy decides about Jobs still running (Allow runs
// beside them, Forbid skips, Replace deletes them first); finished Jobs
// beyond the history limits are deleted; status lists the active Jobs and
// the last scheduled and successful times.
package cronjob

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "cronjob"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "cronjob-controller"
	workers     = 5
	// scheduledAnnotation records on a Job the time it was scheduled for.
	scheduledAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"
	// tooManyMissed is how many missed times a CronJob reports as an
	// event before it starts the latest only.
	tooManyMissed = 100
)

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the CronJob control loop; its queue holds CronJob keys.
type Controller struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
	now      func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the CronJob controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	batch := cc.Informers.Batch().V1()
	c := &Controller{
		client:   cc.Client,
		cronJobs: batch.CronJobs().Lister(),
		jobs:     batch.Jobs().Lister(),
		recorder: cc.Recorder(eventSource),
		queue:    component.NewQueue(controllerName),
		now:      time.Now,
	}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "cronjob", Informer: batch.CronJobs().Informer(), Funcs: informer.OnChange(enqueue)},
		informer.Handler{Name: "job", Informer: batch.Jobs().Informer(), Funcs: informer.OnChange(c.jobChanged)},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs CronJobs until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

// jobChanged wakes the CronJob that owns a Job.
func (c *Controller) jobChanged(obj any) {
	job, ok := informer.FromTombstone[*batchv1.Job](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(job); ref != nil && ref.Kind == cronJobKind.Kind {
		c.queue.Add(job.Namespace + "/" + ref.Name)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cj, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	jobs, err := c.jobs.Jobs(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	cj = cj.DeepCopy()
	owned := ownedJobs(cj, jobs)
	orig := cj.Status.DeepCopy()
	trackJobs(cj, owned)
	if err := c.pruneHistory(ctx, cj, owned); err != nil {
		return err
	}
	next, err := c.schedule(ctx, cj, owned)
	if err != nil {
		return err
	}
	if err := c.writeStatus(ctx, cj, orig); err != nil {
		return err
	}
	if !next.IsZero() {
		c.queue.AddAfter(key, next.Sub(c.now())+100*time.Millisecond)
	}
	return nil
}
