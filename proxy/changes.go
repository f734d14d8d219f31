package proxy

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// labelServiceProxyName marks a service handled by another proxy.
const labelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// changes collects informer events between syncs: the latest Service and
// EndpointSlices of every service and which services changed since the
// last take. Informer handlers record; the sync takes. Safe for
// concurrent use.
type changes struct {
	mu       sync.Mutex
	services map[types.NamespacedName]*corev1.Service
	slices   map[types.NamespacedName]map[string]*discovery.EndpointSlice
	dirty    map[types.NamespacedName]bool
	notify   func() // called after every recorded change
}

func newChanges(notify func()) *changes {
	return &changes{
		services: map[types.NamespacedName]*corev1.Service{},
		slices:   map[types.NamespacedName]map[string]*discovery.EndpointSlice{},
		dirty:    map[types.NamespacedName]bool{},
		notify:   notify,
	}
}

// service records svc, or its deletion when gone. A service another proxy
// claims (the service-proxy-name label) counts as gone, as for kube-proxy.
func (c *changes) service(svc *corev1.Service, gone bool) {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	if _, other := svc.Labels[labelServiceProxyName]; other {
		gone = true
	}
	c.mu.Lock()
	if gone {
		delete(c.services, key)
	} else {
		c.services[key] = svc
	}
	c.dirty[key] = true
	c.mu.Unlock()
	c.notify()
}

// slice records an EndpointSlice, or its deletion when gone, under the
// service its kubernetes.io/service-name label names. Slices without the
// label belong to no service; those of headless services (labelled so by
// the EndpointSlice controller) have nothing to proxy.
func (c *changes) slice(s *discovery.EndpointSlice, gone bool) {
	name := s.Labels[discovery.LabelServiceName]
	if _, headless := s.Labels[corev1.IsHeadlessService]; name == "" || headless {
		return
	}
	key := types.NamespacedName{Namespace: s.Namespace, Name: name}
	c.mu.Lock()
	if gone {
		delete(c.slices[key], s.Name)
		if len(c.slices[key]) == 0 {
			delete(c.slices, key)
		}
	} else {
		if c.slices[key] == nil {
			c.slices[key] = map[string]*discovery.EndpointSlice{}
		}
		c.slices[key][s.Name] = s
	}
	c.dirty[key] = true
	c.mu.Unlock()
	c.notify()
}

// serviceState is one service as a sync sees it: its Service (nil once
// deleted) and its EndpointSlices.
type serviceState struct {
	service *corev1.Service
	slices  []*discovery.EndpointSlice
}

// take returns the services changed since the last take (every service
// when all is set) and forgets that they changed.
func (c *changes) take(all bool) map[types.NamespacedName]serviceState {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := c.dirty
	if all {
		for k := range c.services {
			keys[k] = true
		}
	}
	c.dirty = map[types.NamespacedName]bool{}
	out := make(map[types.NamespacedName]serviceState, len(keys))
	for k := range keys {
		st := serviceState{service: c.services[k]}
		for _, s := range c.slices[k] {
			st.slices = append(st.slices, s)
		}
		out[k] = st
	}
	return out
}
