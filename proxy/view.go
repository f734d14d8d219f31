package proxy

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ServiceView is what a node's proxy has in its rules for one Service, as
// of its last successful sync: what `skiff explain service` asks of each
// node.
type ServiceView struct {
	// Slices are the EndpointSlices the rules were made from, each name
	// with its resourceVersion: a node whose slices are not the API's
	// current ones has not synced the last change.
	Slices map[string]string `json:"slices"`
	Ports  []PortView        `json:"ports"`
	// Synced is when the rules for the Service were last written.
	Synced time.Time `json:"synced"`
}

// PortView is one port of a Service in the rules.
type PortView struct {
	Name      string         `json:"name"` // namespace/name:port
	ClusterIP string         `json:"clusterIP"`
	Port      int32          `json:"port"`
	NodePort  int32          `json:"nodePort,omitempty"`
	Endpoints []EndpointView `json:"endpoints"`
}

// EndpointView is an endpoint of a port in the rules.
type EndpointView struct {
	Address string `json:"address"` // ip:port
	Ready   bool   `json:"ready"`
	Local   bool   `json:"local,omitempty"` // on this node
	Pod     string `json:"pod,omitempty"`   // namespace/name
}

// views holds the ServiceView of every Service the rules hold; the sync
// loop publishes, readers read. Safe for concurrent use.
type views struct {
	mu sync.RWMutex
	m  map[types.NamespacedName]ServiceView
}

// Service returns what the rules hold for the Service namespace/name, if
// they hold it.
func (p *Proxier) Service(namespace, name string) (ServiceView, bool) {
	p.views.mu.RLock()
	defer p.views.mu.RUnlock()
	v, ok := p.views.m[types.NamespacedName{Namespace: namespace, Name: name}]
	return v, ok
}

// publish records, after a successful sync at when, the views of the
// services taken for it; a full sync took every service, and replaces
// them all.
func (p *Proxier) publish(taken map[types.NamespacedName]serviceState, full bool, when time.Time) {
	next := map[types.NamespacedName]ServiceView{}
	p.views.mu.RLock()
	if !full {
		next = maps.Clone(p.views.m)
	}
	p.views.mu.RUnlock()
	for key, ss := range taken {
		if ss.service == nil {
			delete(next, key)
			continue
		}
		v := ServiceView{Slices: map[string]string{}, Ports: []PortView{}, Synced: when}
		for _, s := range ss.slices {
			v.Slices[s.Name] = s.ResourceVersion
		}
		for _, name := range p.st.byService[key] {
			v.Ports = append(v.Ports, portView(p.st.ports[name], p.st.endpoints[name]))
		}
		next[key] = v
	}
	p.views.mu.Lock()
	p.views.m = next
	p.views.mu.Unlock()
}

func portView(sp servicePort, eps []endpoint) PortView {
	v := PortView{Name: sp.name.String(), ClusterIP: sp.clusterIP, Port: sp.port, NodePort: sp.nodePort, Endpoints: []EndpointView{}}
	for _, e := range eps {
		ev := EndpointView{Address: e.String(), Ready: e.ready, Local: e.local}
		if e.pod.name != "" {
			ev.Pod = e.pod.namespace + "/" + e.pod.name
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	return v
}
