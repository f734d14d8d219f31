package dns

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	byClusterIP = "clusterIP"
	byService   = "service"
)

// Catalog reads Services and EndpointSlices from shared informers' caches,
// indexed for the queries DNS answers.
type Catalog struct {
	serviceIdx, sliceIdx cache.Indexer
}

var _ catalog = (*Catalog)(nil)

// NewCatalog adds its indexes to the informers; call it before they start.
// It uses the namespace index shared informers have.
func NewCatalog(services, slices cache.SharedIndexInformer) (*Catalog, error) {
	err := services.AddIndexers(cache.Indexers{
		byClusterIP: func(obj any) ([]string, error) {
			if svc, ok := obj.(*corev1.Service); ok && svc.Spec.ClusterIP != corev1.ClusterIPNone {
				return svc.Spec.ClusterIPs, nil
			}
			return nil, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("service indexes: %w", err)
	}
	err = slices.AddIndexers(cache.Indexers{byService: func(obj any) ([]string, error) {
		if s, ok := obj.(*discovery.EndpointSlice); ok && s.Labels[discovery.LabelServiceName] != "" {
			return []string{s.Namespace + "/" + s.Labels[discovery.LabelServiceName]}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return nil, fmt.Errorf("endpointslice indexes: %w", err)
	}
	return &Catalog{serviceIdx: services.GetIndexer(), sliceIdx: slices.GetIndexer()}, nil
}

func (c *Catalog) service(namespace, name string) (*corev1.Service, bool) {
	obj, ok, err := c.serviceIdx.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	svc, ok := obj.(*corev1.Service)
	return svc, ok
}

func (c *Catalog) slices(namespace, service string) []*discovery.EndpointSlice {
	objs, _ := c.sliceIdx.ByIndex(byService, namespace+"/"+service)
	out := make([]*discovery.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*discovery.EndpointSlice); ok {
			out = append(out, s)
		}
	}
	return out
}

func (c *Catalog) hasNamespace(namespace string) bool {
	objs, _ := c.serviceIdx.ByIndex(cache.NamespaceIndex, namespace)
	return len(objs) > 0
}

func (c *Catalog) serviceByIP(ip string) (*corev1.Service, bool) {
	objs, _ := c.serviceIdx.ByIndex(byClusterIP, ip)
	if len(objs) == 0 {
		return nil, false
	}
	svc, ok := objs[0].(*corev1.Service)
	return svc, ok
}
