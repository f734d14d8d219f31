// Package endpointslicemirroring mirrors the Endpoints that users write
// for Services without a selector into EndpointSlices, as
// kube-controller-manager's EndpointSlice mirroring controller does, so
// that what reads only EndpointSlices (skiff's proxy and DNS, kube-proxy)
// sees those endpoints too. The slices carry the Service's name, the
// mirroring controller's managed-by label and an owner reference to the
// Endpoints (they go with it); an Endpoints labelled
// endpointslice.kubernetes.io/skip-mirror=true, or of a Service with a
// selector (the EndpointSlice controller's), is not mirrored.
package endpointslicemirroring

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "endpointslicemirroring"
	// managedBy is the slices' managed-by label, as kube-controller-manager writes it.
	managedBy = "endpointslicemirroring-controller.k8s.io"
	// maxEndpointsPerSlice is kube-controller-manager's default for mirrored slices.
	maxEndpointsPerSlice = 1000
	workers              = 1
)

// Controller writes the mirrored slices; its queue holds Endpoints keys
// (the Service's namespace/name).
type Controller struct {
	client    kubernetes.Interface
	endpoints corelisters.EndpointsLister
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
	queue     workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Informers)
}

func newController(client kubernetes.Interface, inf informers.SharedInformerFactory) (*Controller, error) {
	core, sl := inf.Core().V1(), inf.Discovery().V1().EndpointSlices()
	c := &Controller{client: client, endpoints: core.Endpoints().Lister(), services: core.Services().Lister(),
		slices: sl.Lister(), queue: component.NewQueue(controllerName)}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "endpoints", Informer: core.Endpoints().Informer(), Funcs: informer.OnChange(enqueue)},
		informer.Handler{Name: "service", Informer: core.Services().Informer(), Funcs: informer.OnChange(enqueue)},
		informer.Handler{Name: "endpointslice", Informer: sl.Informer(), Funcs: informer.OnChange(c.sliceChanged)},
	)
	return c, err
}

// Run mirrors until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

// sliceChanged queues the Service of a mirrored slice someone changed or
// deleted, so that it is written back.
func (c *Controller) sliceChanged(obj any) {
	s, ok := informer.FromTombstone[*discovery.EndpointSlice](obj)
	if ok && s.Labels[discovery.LabelManagedBy] == managedBy && s.Labels[discovery.LabelServiceName] != "" {
		c.queue.Add(s.Namespace + "/" + s.Labels[discovery.LabelServiceName])
	}
}

// sync makes the mirrored slices of the Endpoints at key what it says, or
// none when it is not to be mirrored.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	var want []*discovery.EndpointSlice
	ep, err := c.endpoints.Endpoints(namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if ep != nil && c.mirrored(ep) {
		want = desiredSlices(ep)
	}
	have, err := c.slices.EndpointSlices(namespace).List(labels.SelectorFromValidatedSet(labels.Set{
		discovery.LabelServiceName: name, discovery.LabelManagedBy: managedBy}))
	if err != nil {
		return err
	}
	return c.reconcile(ctx, namespace, want, have)
}

// mirrored says whether the Endpoints is one to mirror: its Service exists
// and has no selector, and it does not ask to be skipped.
func (c *Controller) mirrored(ep *corev1.Endpoints) bool {
	if ep.Labels[discovery.LabelSkipMirror] == "true" {
		return false
	}
	svc, err := c.services.Services(ep.Namespace).Get(ep.Name)
	return err == nil && svc.Spec.Selector == nil
}

// reconcile turns the slices there are into those wanted: each wanted
// slice takes the place of one there of its address type (updated when it
// differs), the rest are created, and those left over deleted.
func (c *Controller) reconcile(ctx context.Context, namespace string, want, have []*discovery.EndpointSlice) error {
	api := c.client.DiscoveryV1().EndpointSlices(namespace)
	slices.SortFunc(have, func(a, b *discovery.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	used := map[string]bool{}
	for _, w := range want {
		i := slices.IndexFunc(have, func(h *discovery.EndpointSlice) bool { return !used[h.Name] && h.AddressType == w.AddressType })
		if i < 0 {
			if _, err := api.Create(ctx, w, metav1.CreateOptions{}); err != nil {
				return err
			}
			continue
		}
		h := have[i]
		used[h.Name] = true
		if sameSlice(h, w) {
			continue
		}
		up := h.DeepCopy()
		up.Labels, up.Annotations, up.OwnerReferences = w.Labels, w.Annotations, w.OwnerReferences
		up.Ports, up.Endpoints = w.Ports, w.Endpoints
		if _, err := api.Update(ctx, up, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for _, h := range have {
		if !used[h.Name] {
			if err := api.Delete(ctx, h.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

func sameSlice(a, b *discovery.EndpointSlice) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		apiequality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		apiequality.Semantic.DeepEqual(a.Ports, b.Ports) && apiequality.Semantic.DeepEqual(a.Endpoints, b.Endpoints)
}

// desiredSlices are the slices mirroring ep: per subset and address type,
// up to maxEndpointsPerSlice endpoints each (ready ones, then not ready),
// with the subset's ports.
func desiredSlices(ep *corev1.Endpoints) []*discovery.EndpointSlice {
	var out []*discovery.EndpointSlice
	for _, ss := range ep.Subsets {
		byType := map[discovery.AddressType][]discovery.Endpoint{}
		for _, group := range []struct {
			addrs []corev1.EndpointAddress
			ready bool
		}{{ss.Addresses, true}, {ss.NotReadyAddresses, false}} {
			for _, a := range group.addrs {
				t, ok := addressType(a.IP)
				if !ok {
					continue
				}
				byType[t] = append(byType[t], endpoint(a, group.ready))
			}
		}
		for _, t := range []discovery.AddressType{discovery.AddressTypeIPv4, discovery.AddressTypeIPv6} {
			for chunk := range slices.Chunk(byType[t], maxEndpointsPerSlice) {
				out = append(out, newSlice(ep, t, ports(ss.Ports), chunk))
			}
		}
	}
	return out
}

func addressType(ip string) (discovery.AddressType, bool) {
	addr, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return "", false
	case addr.Is4():
		return discovery.AddressTypeIPv4, true
	}
	return discovery.AddressTypeIPv6, true
}

func endpoint(a corev1.EndpointAddress, ready bool) discovery.Endpoint {
	e := discovery.Endpoint{Addresses: []string{a.IP}, NodeName: a.NodeName, TargetRef: a.TargetRef,
		Conditions: discovery.EndpointConditions{Ready: &ready}}
	if a.Hostname != "" {
		e.Hostname = &a.Hostname
	}
	return e
}

func ports(ps []corev1.EndpointPort) []discovery.EndpointPort {
	out := make([]discovery.EndpointPort, 0, len(ps))
	for _, p := range ps {
		out = append(out, discovery.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol, AppProtocol: p.AppProtocol})
	}
	return out
}

// newSlice is a mirrored slice of ep: its labels (and annotations but
// kubectl's last applied configuration) with the Service's name and the
// managed-by label, owned by ep.
func newSlice(ep *corev1.Endpoints, t discovery.AddressType, ports []discovery.EndpointPort, eps []discovery.Endpoint) *discovery.EndpointSlice {
	lbls := maps.Clone(ep.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[discovery.LabelServiceName], lbls[discovery.LabelManagedBy] = ep.Name, managedBy
	ann := maps.Clone(ep.Annotations)
	delete(ann, corev1.LastAppliedConfigAnnotation)
	owner := metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))
	return &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ep.Name + "-", Namespace: ep.Namespace, Labels: lbls,
			Annotations: ann, OwnerReferences: []metav1.OwnerReference{*owner}},
		AddressType: t, Ports: ports, Endpoints: slices.Clone(eps),
	}
}
