// Package endpoints keeps, for every Service with a selector, an Endpoints
// object of the same name listing the pods the selector matches, as
// kube-controller-manager's endpoint controller does: ready pods under
// addresses, others under notReadyAddresses, ports resolved per pod and
// grouped into subsets. Services without a selector keep the Endpoints
// their users write; the Endpoints of a deleted Service are deleted.
package endpoints

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "endpoints"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "endpoint-controller"
	workers     = 2
)

// Controller writes the Endpoints of selector Services. Its queue holds
// service keys (namespace/name).
type Controller struct {
	client    typedcorev1.EndpointsGetter
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	recorder  record.EventRecorder
	queue     workqueue.TypedRateLimitingInterface[string]
	enqueue   func(obj any) // adds an object's key to queue
}

var _ component.Component = (*Controller)(nil)

// New builds the endpoints controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Informers, cc.Recorder(eventSource))
}

func newController(client kubernetes.Interface, inf informers.SharedInformerFactory, recorder record.EventRecorder) (*Controller, error) {
	core := inf.Core().V1()
	c := &Controller{
		client:    client.CoreV1(),
		services:  core.Services().Lister(),
		pods:      core.Pods().Lister(),
		endpoints: core.Endpoints().Lister(),
		recorder:  recorder,
		queue:     component.NewQueue(controllerName),
	}
	c.enqueue = component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "service", Informer: core.Services().Informer(), Funcs: informer.OnChange(c.enqueue)},
		informer.Handler{Name: "pod", Informer: core.Pods().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.podAdded, UpdateFunc: c.podUpdated, DeleteFunc: c.podDeleted}},
		// Deleted Endpoints of a live selector Service are written again.
		informer.Handler{Name: "endpoints", Informer: core.Endpoints().Informer(), Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueue}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run writes Endpoints until ctx ends. It first queues every Endpoints
// there is, so that those whose Service went while no controller ran are
// deleted.
func (c *Controller) Run(ctx context.Context) {
	c.queueLeftovers()
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) queueLeftovers() {
	all, err := c.endpoints.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ep := range all {
		// Old-style leader election records live in Endpoints without a
		// Service; they are not ours to delete.
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; ok {
			continue
		}
		c.enqueue(ep)
	}
}

func (c *Controller) podAdded(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		c.enqueueServicesOf(pod)
	}
}

func (c *Controller) podUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion || !endpointsChanged(old, cur) {
		return
	}
	c.enqueueServicesOf(cur)
	if !maps.Equal(old.Labels, cur.Labels) {
		c.enqueueServicesOf(old)
	}
}

func (c *Controller) podDeleted(obj any) {
	if pod, ok := informer.FromTombstone[*corev1.Pod](obj); ok {
		c.enqueueServicesOf(pod)
	}
}

// enqueueServicesOf queues the services whose selector matches pod.
func (c *Controller) enqueueServicesOf(pod *corev1.Pod) {
	services, err := c.services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range services {
		if selects(svc, pod) {
			c.enqueue(svc)
		}
	}
}

// selects reports whether svc has a selector and it matches pod. An empty
// selector counts as none (it does not survive storage anyway).
func selects(svc *corev1.Service, pod *corev1.Pod) bool {
	return len(svc.Spec.Selector) > 0 &&
		labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels))
}

// endpointsChanged reports whether a pod update can change any Endpoints:
// its labels, IPs, readiness, node, hostname, phase or deletion.
func endpointsChanged(old, cur *corev1.Pod) bool {
	return !maps.Equal(old.Labels, cur.Labels) ||
		!slices.Equal(podIPs(old), podIPs(cur)) ||
		podReady(old) != podReady(cur) ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		old.Status.Phase != cur.Status.Phase ||
		old.Spec.NodeName != cur.Spec.NodeName ||
		old.Spec.Hostname != cur.Spec.Hostname ||
		old.Spec.Subdomain != cur.Spec.Subdomain
}
