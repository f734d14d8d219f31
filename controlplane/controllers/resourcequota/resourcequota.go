// Package resourcequota keeps every ResourceQuota's status as
// kube-controller-manager's resource quota controller does: status.hard is
// spec.hard, status.used what the namespace's objects use of it (package
// quota), recalculated when the quota changes, when a counted object is
// deleted or a pod ends (so usage comes back), and every five minutes
// (correcting what admission charged for creates that then failed).
package resourcequota

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/quota"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "resourcequota"
	workers        = 2
	resyncPeriod   = 5 * time.Minute
)

// Controller recalculates quotas; its queue holds quota keys.
type Controller struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	quotas  corelisters.ResourceQuotaLister
	objects map[schema.GroupResource]cache.GenericLister
	clock   clock.Clock
	queue   workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Dynamic, cc.Informers, clock.RealClock{})
}

func newController(client kubernetes.Interface, dyn dynamic.Interface, f informers.SharedInformerFactory, clk clock.Clock) (*Controller, error) {
	c := &Controller{client: client, dynamic: dyn, quotas: f.Core().V1().ResourceQuotas().Lister(),
		objects: map[schema.GroupResource]cache.GenericLister{}, clock: clk, queue: component.NewQueue(controllerName)}
	handlers := []informer.Handler{{Name: "resourcequota", Informer: f.Core().V1().ResourceQuotas().Informer(),
		Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.enqueueQuota, UpdateFunc: c.quotaChanged}}}
	for _, gr := range quota.Tracked {
		gi, err := f.ForResource(gvrOf(gr))
		if err != nil {
			return nil, err
		}
		c.objects[gr] = gi.Lister()
		handlers = append(handlers, informer.Handler{Name: gr.String(), Informer: gi.Informer(),
			Funcs: cache.ResourceEventHandlerFuncs{UpdateFunc: c.podChanged, DeleteFunc: c.objectDeleted}})
	}
	if err := informer.AddHandlers(handlers...); err != nil {
		return nil, err
	}
	return c, nil
}

// gvrOf is the served version of a tracked resource.
func gvrOf(gr schema.GroupResource) schema.GroupVersionResource { return gr.WithVersion("v1") }

// Run keeps the quotas until ctx ends, resyncing all of them every
// resyncPeriod.
func (c *Controller) Run(ctx context.Context) {
	go wait.UntilWithContext(ctx, func(context.Context) { c.enqueueAll() }, resyncPeriod)
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) enqueueQuota(obj any) {
	if key, ok := component.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// quotaChanged recalculates a quota whose limits changed, not one whose
// status admission just charged (the cache may not have the object
// charged for yet).
func (c *Controller) quotaChanged(old, cur any) {
	o, ok1 := old.(*v1.ResourceQuota)
	n, ok2 := cur.(*v1.ResourceQuota)
	if ok1 && ok2 && (!apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !apiequality.Semantic.DeepEqual(n.Spec.Hard, n.Status.Hard)) {
		c.enqueueQuota(n)
	}
}

func (c *Controller) enqueueAll() {
	all, _ := c.quotas.List(labels.Everything())
	for _, q := range all {
		c.enqueueQuota(q)
	}
}

// enqueueNamespace queues the quotas of obj's namespace.
func (c *Controller) enqueueNamespace(obj any) {
	m, ok := informer.FromTombstone[metav1.Object](obj)
	if !ok {
		return
	}
	qs, _ := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	for _, q := range qs {
		c.enqueueQuota(q)
	}
}

func (c *Controller) objectDeleted(obj any) { c.enqueueNamespace(obj) }

// podChanged gives usage back when a pod terminates.
func (c *Controller) podChanged(old, cur any) {
	o, ok1 := old.(*v1.Pod)
	n, ok2 := cur.(*v1.Pod)
	if ok1 && ok2 && (terminal(n) && !terminal(o) || n.DeletionTimestamp != nil && o.DeletionTimestamp == nil) {
		c.enqueueNamespace(n)
	}
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// sync recalculates one quota and writes its status if it changed.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// A quota not counted yet (or whose limits changed) is counted through
	// the API: until its status names its limits, admission refuses what it
	// would count, so nothing is in flight and the count is exact, where
	// the caches might not have the objects made just before it.
	counted := apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard)
	objects := c.cached
	if !counted {
		objects = c.live(ctx)
	}
	used, err := c.usage(q, objects)
	if err == nil && counted && below(used, q.Status.Used) {
		// Admission charges for an object before it is written, so the
		// caches may not have it yet: a charge is given back only when the
		// API agrees it is not there.
		used, err = c.usage(q, c.live(ctx))
	}
	if err != nil {
		return err
	}
	status := v1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: quota.Mask(used, q.Spec.Hard)}
	if apiequality.Semantic.DeepEqual(status, q.Status) {
		return nil
	}
	updated := q.DeepCopy()
	updated.Status = status
	if _, err := c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of quota %s: %w", key, err)
	}
	return nil
}

// below reports whether used is less than was charged for any resource.
func below(used, charged v1.ResourceList) bool {
	for name, q := range charged {
		if u := used[name]; u.Cmp(q) < 0 {
			return true
		}
	}
	return false
}

// objectsOf lists a tracked resource's objects in a namespace.
type objectsOf func(gr schema.GroupResource, namespace string) ([]runtime.Object, error)

// cached lists from the informers' caches.
func (c *Controller) cached(gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	return c.objects[gr].ByNamespace(namespace).List(labels.Everything())
}

// live lists through the API, pods and services as their types (their
// usage reads their specs).
func (c *Controller) live(ctx context.Context) objectsOf {
	return func(gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
		list, err := c.dynamic.Resource(gvrOf(gr)).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]runtime.Object, 0, len(list.Items))
		for i := range list.Items {
			newTyped, ok := typed[gr]
			if !ok {
				out = append(out, &list.Items[i])
				continue
			}
			obj := newTyped()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, obj); err != nil {
				return nil, err
			}
			out = append(out, obj)
		}
		return out, nil
	}
}

// typed are the resources whose usage reads their objects' fields.
var typed = map[schema.GroupResource]func() runtime.Object{
	v1.Resource("pods"):     func() runtime.Object { return &v1.Pod{} },
	v1.Resource("services"): func() runtime.Object { return &v1.Service{} },
}

// usage sums what the namespace's objects use that q counts.
func (c *Controller) usage(q *v1.ResourceQuota, objectsOf objectsOf) (v1.ResourceList, error) {
	used := v1.ResourceList{}
	now := c.clock.Now()
	for _, gr := range quota.Tracked {
		objs, err := objectsOf(gr, q.Namespace)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if quota.Matches(q.Spec.Scopes, obj) {
				used = quota.Add(used, quota.Usage(gr, obj, now))
			}
		}
	}
	return used, nil
}
