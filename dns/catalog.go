package dns

import (
	"encoding/json"
	"fmt"
	"os"

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
	if err := services.AddIndexers(serviceIndexers); err != nil {
		return nil, fmt.Errorf("service indexes: %w", err)
	}
	if err := slices.AddIndexers(sliceIndexers); err != nil {
		return nil, fmt.Errorf("endpointslice indexes: %w", err)
	}
	return &Catalog{serviceIdx: services.GetIndexer(), sliceIdx: slices.GetIndexer()}, nil
}

var serviceIndexers = cache.Indexers{byClusterIP: func(obj any) ([]string, error) {
	if svc, ok := obj.(*corev1.Service); ok && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return svc.Spec.ClusterIPs, nil
	}
	return nil, nil
}}

var sliceIndexers = cache.Indexers{byService: func(obj any) ([]string, error) {
	if s, ok := obj.(*discovery.EndpointSlice); ok && s.Labels[discovery.LabelServiceName] != "" {
		return []string{s.Namespace + "/" + s.Labels[discovery.LabelServiceName]}, nil
	}
	return nil, nil
}}

// snapshot is a catalog saved to a file: what a node's DNS answers from
// when its agent restarts while no API server can be reached.
type snapshot struct {
	Services       []*corev1.Service          `json:"services"`
	EndpointSlices []*discovery.EndpointSlice `json:"endpointSlices"`
}

// Save writes the catalog's Services and EndpointSlices to path, whole or
// not at all (through a temporary file renamed over it), without their
// managed fields and annotations, which DNS does not read.
func (c *Catalog) Save(path string) error {
	var snap snapshot
	for _, obj := range c.serviceIdx.List() {
		if svc, ok := obj.(*corev1.Service); ok {
			svc = svc.DeepCopy()
			svc.ManagedFields, svc.Annotations = nil, nil
			snap.Services = append(snap.Services, svc)
		}
	}
	for _, obj := range c.sliceIdx.List() {
		if s, ok := obj.(*discovery.EndpointSlice); ok {
			s = s.DeepCopy()
			s.ManagedFields, s.Annotations = nil, nil
			snap.EndpointSlices = append(snap.EndpointSlices, s)
		}
	}
	data, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	tmp := path + ".part"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadCatalog reads a catalog Save wrote, and says how many Services it
// holds.
func LoadCatalog(path string) (*Catalog, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := services.AddIndexers(serviceIndexers); err != nil {
		return nil, 0, err
	}
	if err := slices.AddIndexers(sliceIndexers); err != nil {
		return nil, 0, err
	}
	for _, svc := range snap.Services {
		if err := services.Add(svc); err != nil {
			return nil, 0, err
		}
	}
	for _, s := range snap.EndpointSlices {
		if err := slices.Add(s); err != nil {
			return nil, 0, err
		}
	}
	return &Catalog{serviceIdx: services, sliceIdx: slices}, len(snap.Services), nil
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
