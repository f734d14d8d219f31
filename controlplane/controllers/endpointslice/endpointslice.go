// Package endpointslice keeps the discovery.k8s.io/v1 EndpointSlices of
// every Service with a selector, as kube-controller-manager's EndpointSlice
// controller does. The reconciling itself (which pods go into which slice
// of at most 100 endpoints, per address type and port set, with the
// ready/serving/terminating conditions, node, zone, target reference and
// hostname, changing as few slices as it can) is k8s.io/endpointslice, the
// library kube-controller-manager runs; this package feeds it from the
// shared informers and a workqueue of service keys.
package endpointslice

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	slicerec "k8s.io/endpointslice"
	sliceutil "k8s.io/endpointslice/util"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
	"github.com/skiff-lab/skiff/podtrace"
)

const (
	controllerName = "endpointslice"
	// managedBy is the value of the slices' managed-by label, as
	// kube-controller-manager writes it.
	managedBy = "endpointslice-controller.k8s.io"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "endpoint-slice-controller"
	// maxEndpointsPerSlice is kube-controller-manager's default.
	maxEndpointsPerSlice = 100
	// sliceChangeDelay batches the syncs a change of the slices themselves
	// causes (most often our own writes coming back), as kube's does.
	sliceChangeDelay = time.Second
	workers          = 2
)

// errStaleCache retries a sync whose informer cache has not yet seen the
// slices this controller last wrote for the service.
var errStaleCache = errors.New("EndpointSlice informer cache is out of date")

// Controller writes the EndpointSlices of selector Services. Its queue
// holds service keys (namespace/name).
type Controller struct {
	services   corelisters.ServiceLister
	pods       corelisters.PodLister
	slices     discoverylisters.EndpointSliceLister
	reconciler *slicerec.Reconciler
	// tracker remembers the generation of every slice written, so that a
	// sync on a cache that has not seen our last write waits for it.
	tracker   *sliceutil.EndpointSliceTracker
	triggers  *sliceutil.TriggerTimeTracker
	recorder  record.EventRecorder
	endpoints *readyEndpoints // the steps of pods' journeys (trace.go)
	queue     workqueue.TypedRateLimitingInterface[string]
	enqueue   func(obj any) // adds an object's key to queue
	log       logr.Logger
}

var _ component.Component = (*Controller)(nil)

// New builds the EndpointSlice controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	c, err := newController(cc.Client, cc.Informers, cc.Recorder(eventSource))
	if err == nil {
		c.endpoints.tracer = podtrace.NewTracer(cc.Tracing, "endpointslice-controller", "")
	}
	return c, err
}

func newController(client kubernetes.Interface, inf informers.SharedInformerFactory, recorder record.EventRecorder) (*Controller, error) {
	core, slices := inf.Core().V1(), inf.Discovery().V1().EndpointSlices()
	tracker := sliceutil.NewEndpointSliceTracker()
	c := &Controller{
		services: core.Services().Lister(),
		pods:     core.Pods().Lister(),
		slices:   slices.Lister(),
		reconciler: slicerec.NewReconciler(client, core.Nodes().Lister(), maxEndpointsPerSlice,
			tracker, nil, recorder, managedBy),
		tracker:   tracker,
		triggers:  sliceutil.NewTriggerTimeTracker(),
		recorder:  recorder,
		endpoints: &readyEndpoints{ready: map[string]map[types.UID]bool{}},
		queue:     component.NewQueue(controllerName),
		log:       logr.FromSlogHandler(slog.Default().Handler()).WithValues("controller", controllerName),
	}
	c.enqueue = component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "service", Informer: core.Services().Informer(), Funcs: informer.OnChange(c.enqueue)},
		informer.Handler{Name: "pod", Informer: core.Pods().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.podChanged(nil, obj) },
			UpdateFunc: c.podChanged,
			DeleteFunc: func(obj any) { c.podChanged(obj, nil) },
		}},
		informer.Handler{Name: "endpointslice", Informer: slices.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.sliceAdded, UpdateFunc: c.sliceUpdated, DeleteFunc: c.sliceDeleted}},
		// The reconciler reads zones from the node lister.
		informer.Handler{Name: "node", Informer: core.Nodes().Informer(), Funcs: cache.ResourceEventHandlerFuncs{}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run writes EndpointSlices until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

// podChanged queues the services whose slices a pod event can change: those
// selecting the pod now and, when its labels changed, before. A pod delete
// comes as old (possibly a tombstone) and nil; an add as nil and new.
func (c *Controller) podChanged(old, cur any) {
	if old != nil && cur == nil {
		pod, ok := informer.FromTombstone[*corev1.Pod](old)
		if !ok {
			return
		}
		old = pod
	}
	keys, err := sliceutil.GetServicesToUpdate(c.services, sliceutil.GetPodUpdateProjectionKey(old, cur))
	if err != nil {
		return
	}
	for key := range keys {
		c.queue.Add(key)
	}
}

// sliceAdded and sliceUpdated queue the service of a slice we manage when
// it is not the version we wrote (someone else changed it), or when the
// slice changed hands or services.
func (c *Controller) sliceAdded(obj any) {
	if s, ok := obj.(*discovery.EndpointSlice); ok && c.reconciler.ManagedByController(s) && c.tracker.ShouldSync(s) {
		c.enqueueSliceService(s)
	}
}

func (c *Controller) sliceUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*discovery.EndpointSlice)
	cur, ok2 := newObj.(*discovery.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	if old.Labels[discovery.LabelServiceName] != cur.Labels[discovery.LabelServiceName] {
		c.enqueueSliceService(old)
		c.enqueueSliceService(cur)
		return
	}
	if c.reconciler.ManagedByChanged(old, cur) || (c.reconciler.ManagedByController(cur) && c.tracker.ShouldSync(cur)) {
		c.enqueueSliceService(cur)
	}
}

// sliceDeleted queues the service of a managed slice deleted by someone
// other than this controller, so that it is written again.
func (c *Controller) sliceDeleted(obj any) {
	s, ok := informer.FromTombstone[*discovery.EndpointSlice](obj)
	if ok && c.reconciler.ManagedByController(s) && c.tracker.Has(s) && !c.tracker.HandleDeletion(s) {
		c.enqueueSliceService(s)
	}
}

func (c *Controller) enqueueSliceService(s *discovery.EndpointSlice) {
	if key, err := slicerec.ServiceControllerKey(s); err == nil {
		c.queue.AddAfter(key, sliceChangeDelay)
	}
}

// sync reconciles the slices of the service at key with the pods its
// selector matches. A deleted service's slices go with it through their
// owner reference (the garbage collector); this only forgets it. Services
// of type ExternalName and services without a selector are left to their
// users, as in Kubernetes.
func (c *Controller) sync(_ context.Context, key string) error {
	start := time.Now()
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller made; nothing to retry
	}
	svc, err := c.services.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.DeleteService(namespace, name)
		c.reconciler.DeleteService(namespace, name)
		c.tracker.DeleteService(namespace, name)
		c.endpoints.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}
	pods, err := c.pods.Pods(namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	slices, err := c.managedSlices(svc)
	if err != nil {
		return err
	}
	if c.tracker.StaleSlices(svc, slices) {
		return errStaleCache
	}
	trigger := c.triggers.ComputeEndpointLastChangeTriggerTime(namespace, svc, pods)
	if err := c.reconciler.Reconcile(c.log, svc, pods, slices, trigger); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", namespace, name, err)
		return err
	}
	c.endpoints.written(key, name, pods, start)
	return nil
}

// managedSlices lists the slices this controller keeps for svc, leaving
// out those already being deleted.
func (c *Controller) managedSlices(svc *corev1.Service) ([]*discovery.EndpointSlice, error) {
	all, err := c.slices.EndpointSlices(svc.Namespace).List(labels.SelectorFromValidatedSet(labels.Set{
		discovery.LabelServiceName: svc.Name, discovery.LabelManagedBy: managedBy}))
	if err != nil {
		return nil, err
	}
	live := all[:0:0]
	for _, s := range all {
		if s.DeletionTimestamp == nil {
			live = append(live, s)
		}
	}
	return live, nil
}
