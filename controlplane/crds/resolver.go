package crds

import (
	"fmt"
	"net/url"

	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// endpointResolver sends a webhook behind a Service (a CRD's conversion
// webhook) straight to one of its ready endpoints, as kube-apiserver does
// with --enable-aggregator-routing: the control plane reaches pod IPs
// through the node network, and needs no Service proxy of its own.
type endpointResolver struct {
	services corelisters.ServiceLister
	slices   proxy.EndpointSliceGetter
}

func newEndpointResolver(f informers.SharedInformerFactory) (*endpointResolver, error) {
	slices, err := proxy.NewEndpointSliceIndexerGetter(f.Discovery().V1().EndpointSlices())
	if err != nil {
		return nil, fmt.Errorf("endpoint slices index: %w", err)
	}
	return &endpointResolver{services: f.Core().V1().Services().Lister(), slices: slices}, nil
}

// ResolveEndpoint implements webhook.ServiceResolver.
func (r *endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveEndpoint(r.services, r.slices, namespace, name, port)
}
