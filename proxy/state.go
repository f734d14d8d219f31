package proxy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// newState returns an empty state.
func newState() *state {
	return &state{
		ports:     map[portName]servicePort{},
		endpoints: map[portName][]endpoint{},
		byService: map[types.NamespacedName][]portName{},
	}
}

// staleFlow is UDP conntrack state to forget after a sync: flows to
// serviceIP (a cluster or external IP) answered by an endpoint that left,
// or, with no endpoint, every flow to serviceIP:port (those recorded while
// the port had no endpoints would otherwise keep being refused).
type staleFlow struct {
	serviceIP string
	port      int32
	endpoint  string // "" for every flow to serviceIP:port
}

// apply brings st up to date with the services in taken and returns the
// ports whose rules changed, and UDP flows to forget once the new rules
// are in. node names this node; skipIP is a cluster IP not proxied.
func (st *state) apply(taken map[types.NamespacedName]serviceState, node, skipIP string) (map[portName]bool, []staleFlow) {
	changed := map[portName]bool{}
	var stale []staleFlow
	for key, ss := range taken {
		var ports []servicePort
		if ss.service != nil {
			ports = servicePorts(ss.service, skipIP)
		}
		keep := map[portName]bool{}
		names := make([]portName, 0, len(ports))
		for _, sp := range ports {
			keep[sp.name] = true
			names = append(names, sp.name)
			eps := endpointsFor(ss.slices, sp.name, node)
			old, had := st.ports[sp.name]
			oldEPs := st.endpoints[sp.name]
			if had && samePort(old, sp) && slices.Equal(oldEPs, eps) {
				continue
			}
			changed[sp.name] = true
			st.ready = append(st.ready, newlyReady(sp.name, oldEPs, eps)...)
			if sp.name.protocol == corev1.ProtocolUDP {
				stale = append(stale, staleUDP(sp, oldEPs, eps)...)
			}
			st.ports[sp.name], st.endpoints[sp.name] = sp, eps
		}
		for _, n := range st.byService[key] {
			if !keep[n] {
				changed[n] = true
				delete(st.ports, n)
				delete(st.endpoints, n)
			}
		}
		st.byService[key] = names
		if len(names) == 0 {
			delete(st.byService, key)
		}
	}
	return changed, stale
}

// newlyReady are the pods of now's ready endpoints that were not ready
// endpoints of the port before.
func newlyReady(port portName, before, now []endpoint) []ReadyPod {
	var out []ReadyPod
	for _, e := range now {
		if !e.ready || e.pod.uid == "" || slices.ContainsFunc(before, func(b endpoint) bool { return b.ready && b.pod == e.pod }) {
			continue
		}
		out = append(out, ReadyPod{UID: e.pod.uid, Namespace: e.pod.namespace, Name: e.pod.name, Service: port.String()})
	}
	return out
}

func samePort(a, b servicePort) bool {
	return a.clusterIP == b.clusterIP && a.port == b.port && a.nodePort == b.nodePort &&
		slices.Equal(a.externalIPs, b.externalIPs) && a.affinity == b.affinity &&
		a.externalLocal == b.externalLocal && a.internalLocal == b.internalLocal &&
		a.healthCheckNodePort == b.healthCheckNodePort
}

// staleUDP lists the UDP flows of sp that its new endpoints make stale:
// those answered by an endpoint no longer usable, and every flow to the
// port when it gains its first usable endpoint.
func staleUDP(sp servicePort, old, cur []endpoint) []staleFlow {
	before, after := usable(old), usable(cur)
	ips := append([]string{sp.clusterIP}, sp.externalIPs...)
	var out []staleFlow
	for _, ip := range ips {
		if len(before) == 0 && len(after) > 0 {
			out = append(out, staleFlow{serviceIP: ip, port: sp.port})
		}
		for _, e := range before {
			if !slices.ContainsFunc(after, func(a endpoint) bool { return a.ip == e.ip }) {
				out = append(out, staleFlow{serviceIP: ip, port: sp.port, endpoint: e.ip})
			}
		}
	}
	return out
}

// endpointCount is how many endpoints all ports have.
func (st *state) endpointCount() int {
	n := 0
	for _, eps := range st.endpoints {
		n += len(eps)
	}
	return n
}
