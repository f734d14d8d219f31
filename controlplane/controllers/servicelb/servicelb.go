// Package servicelb makes Services of type LoadBalancer work without a
// cloud, the way k3s's ServiceLB does but with no pods of its own: every
// node's proxy already routes a LoadBalancer service's ingress addresses
// (its own among them) to the service, so this controller only writes
// status.loadBalancer.ingress with the addresses of the nodes that serve
// it: every Ready node, or under externalTrafficPolicy Local only the Ready
// nodes with a ready endpoint. Services with a spec.loadBalancerClass
// belong to another implementation and are left alone.
package servicelb

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "servicelb"
	workers        = 1
)

// Controller writes LoadBalancer services' ingress addresses. Its queue
// holds service keys.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	queue    workqueue.TypedRateLimitingInterface[string]
	enqueue  func(obj any) // adds an object's key to queue
}

// New builds the controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	core := cc.Informers.Core().V1()
	slices := cc.Informers.Discovery().V1().EndpointSlices()
	c := &Controller{
		client: cc.Client, services: core.Services().Lister(), nodes: core.Nodes().Lister(), slices: slices.Lister(),
		queue: component.NewQueue(controllerName),
	}
	c.enqueue = component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "service", Informer: core.Services().Informer(), Funcs: informer.OnChange(c.enqueue)},
		// Any node change may change every service's addresses.
		informer.Handler{Name: "node", Informer: core.Nodes().Informer(), Funcs: informer.OnChange(func(any) { c.enqueueAll() })},
		informer.Handler{Name: "endpointslice", Informer: slices.Informer(), Funcs: informer.OnChange(c.enqueueSliceService)},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run writes ingress addresses until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) enqueueAll() {
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range all {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			c.enqueue(svc)
		}
	}
}

func (c *Controller) enqueueSliceService(obj any) {
	if s, ok := informer.FromTombstone[*discovery.EndpointSlice](obj); ok && s.Labels[discovery.LabelServiceName] != "" {
		c.queue.Add(s.Namespace + "/" + s.Labels[discovery.LabelServiceName])
	}
}

// sync writes the ingress addresses of the service at key when they
// changed. A service that is no longer a LoadBalancer loses them.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.LoadBalancerClass != nil {
		return nil
	}
	var want []corev1.LoadBalancerIngress
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		if want, err = c.ingress(svc); err != nil {
			return err
		}
	}
	if apiequality.Semantic.DeepEqual(svc.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer.Ingress = want
	if _, err := c.client.CoreV1().Services(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update load balancer status: %w", err)
	}
	return nil
}

// ingress returns the addresses of the nodes that serve svc, sorted.
func (c *Controller) ingress(svc *corev1.Service) ([]corev1.LoadBalancerIngress, error) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var local map[string]bool
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		if local, err = c.nodesWithEndpoints(svc); err != nil {
			return nil, err
		}
	}
	var ips []string
	vip := corev1.LoadBalancerIPModeVIP
	for _, n := range nodes {
		if !ready(n) || (local != nil && !local[n.Name]) {
			continue
		}
		if ip := address(n); ip != "" {
			ips = append(ips, ip)
		}
	}
	slices.Sort(ips)
	var out []corev1.LoadBalancerIngress
	for _, ip := range slices.Compact(ips) {
		out = append(out, corev1.LoadBalancerIngress{IP: ip, IPMode: &vip})
	}
	return out, nil
}

func (c *Controller) nodesWithEndpoints(svc *corev1.Service) (map[string]bool, error) {
	all, err := c.slices.EndpointSlices(svc.Namespace).List(labels.SelectorFromSet(labels.Set{discovery.LabelServiceName: svc.Name}))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, s := range all {
		for _, e := range s.Endpoints {
			if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				out[*e.NodeName] = true
			}
		}
	}
	return out, nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// address is the node's external address, else its internal one.
func address(n *corev1.Node) string {
	var internal string
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeExternalIP:
			return a.Address
		case corev1.NodeInternalIP:
			if internal == "" {
				internal = a.Address
			}
		}
	}
	return internal
}
