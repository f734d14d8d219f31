package dynadmission

import (
	"fmt"
	"net/url"

	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ServiceResolver sends a webhook behind a Service (an admission webhook,
// a CRD's conversion webhook) straight to one of its ready endpoints, as kube-apiserver does
// with --enable-aggregator-routing: the control plane reaches pod IPs
// through the node network, and needs no Service proxy of its own.
type ServiceResolver struct {
	services corelisters.ServiceLister
	slices   proxy.EndpointSliceGetter
}

// NewServiceResolver resolves through f's Service and EndpointSlice caches
// (it registers their informers; the caller starts f).
func NewServiceResolver(f informers.SharedInformerFactory) (*ServiceResolver, error) {
	slices, err := proxy.NewEndpointSliceIndexerGetter(f.Discovery().V1().EndpointSlices())
	if err != nil {
		return nil, fmt.Errorf("endpoint slices index: %w", err)
	}
	return &ServiceResolver{services: f.Core().V1().Services().Lister(), slices: slices}, nil
}

// ResolveEndpoint implements webhook.ServiceResolver.
func (r *ServiceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveEndpoint(r.services, r.slices, namespace, name, port)
}
