package proxy

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// portName names one port of a service, as kube-proxy's ServicePortName:
// "namespace/name:port", or "namespace/name" for an unnamed port.
type portName struct {
	service  types.NamespacedName
	port     string
	protocol corev1.Protocol
}

func (p portName) String() string {
	if p.port == "" {
		return p.service.String()
	}
	return p.service.String() + ":" + p.port
}

// servicePort is what the rules need of one port of a service.
type servicePort struct {
	name        portName
	clusterIP   string
	port        int32
	nodePort    int32
	externalIPs []string // spec.externalIPs and the load balancer's ingress IPs
	// affinity is the ClientIP session affinity timeout in seconds; 0 for
	// none.
	affinity int32
	// externalLocal and internalLocal are the Local traffic policies:
	// external traffic (node ports, external IPs) and cluster traffic
	// then go only to endpoints on this node.
	externalLocal bool
	internalLocal bool
	// healthCheckNodePort answers whether this node has local endpoints,
	// for an externalTrafficPolicy Local service; 0 for none.
	healthCheckNodePort int32
}

// endpoint is one address and port that serves a service port.
type endpoint struct {
	ip                          string
	port                        int32
	ready, serving, terminating bool
	local                       bool   // on this node
	pod                         podKey // the pod behind it, if the slice names one
}

// podKey names the pod an endpoint targets.
type podKey struct {
	uid             types.UID
	namespace, name string
}

func (e endpoint) String() string {
	return netip.AddrPortFrom(netip.MustParseAddr(e.ip), uint16(e.port)).String()
}

// servicePorts returns the ports the proxy routes for svc: none for a
// headless or ExternalName service, a service without an IPv4 cluster IP
// or one whose cluster IP is skip (the cluster DNS address, answered on
// the node itself). LoadBalancer ingress IPs count as external IPs.
func servicePorts(svc *corev1.Service, skip string) []servicePort {
	ip := svc.Spec.ClusterIP
	if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() || ip == skip || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	external := slices.Clone(svc.Spec.ExternalIPs)
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			external = append(external, in.IP)
		}
	}
	var affinity int32
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = corev1.DefaultClientIPServiceAffinitySeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = *c.ClientIP.TimeoutSeconds
		}
	}
	externalLocal := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		(svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(external) > 0)
	out := make([]servicePort, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		sp := servicePort{
			name:          portName{service: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, port: p.Name, protocol: cmp.Or(p.Protocol, corev1.ProtocolTCP)},
			clusterIP:     ip,
			port:          p.Port,
			nodePort:      p.NodePort,
			externalIPs:   external,
			affinity:      affinity,
			externalLocal: externalLocal,
			internalLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		}
		if externalLocal {
			sp.healthCheckNodePort = svc.Spec.HealthCheckNodePort
		}
		out = append(out, sp)
	}
	return out
}

// endpointsFor returns the endpoints of port among a service's slices:
// each IPv4 endpoint of a slice that has a port of that name and protocol,
// once per address and port (a ready copy wins over others while a pod
// moves between slices), in a stable order. Conditions the slice leaves
// unset read as EndpointSlice consumers must read them: ready when unknown,
// serving as ready, not terminating.
func endpointsFor(from []*discovery.EndpointSlice, port portName, node string) []endpoint {
	seen := map[string]int{}
	var out []endpoint
	for _, s := range from {
		if s.AddressType != discovery.AddressTypeIPv4 {
			continue
		}
		num, ok := slicePort(s, port)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ep := endpointOf(e, num, node)
			key := ep.String()
			if i, dup := seen[key]; dup {
				if ep.ready && !out[i].ready {
					out[i] = ep
				}
				continue
			}
			seen[key] = len(out)
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, compareAddrPort)
	return out
}

func slicePort(s *discovery.EndpointSlice, port portName) (int32, bool) {
	for _, p := range s.Ports {
		name, proto := "", corev1.ProtocolTCP
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == port.port && proto == port.protocol && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

func endpointOf(e discovery.Endpoint, port int32, node string) endpoint {
	ready := e.Conditions.Ready == nil || *e.Conditions.Ready
	serving := ready
	if e.Conditions.Serving != nil {
		serving = *e.Conditions.Serving
	}
	ep := endpoint{
		ip: e.Addresses[0], port: port, ready: ready, serving: serving,
		terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
		local:       e.NodeName != nil && *e.NodeName == node,
	}
	if t := e.TargetRef; t != nil && t.Kind == "Pod" {
		ep.pod = podKey{uid: t.UID, namespace: t.Namespace, name: t.Name}
	}
	return ep
}

func compareAddrPort(a, b endpoint) int {
	if c := netip.MustParseAddr(a.ip).Compare(netip.MustParseAddr(b.ip)); c != 0 {
		return c
	}
	return int(a.port) - int(b.port)
}

// usable picks the endpoints traffic goes to among eps (already narrowed
// to the local ones where a Local policy applies): the ready ones; when
// none is ready, the serving ones that are terminating, as kube-proxy does,
// so that connections drain to pods on their way out rather than fail.
func usable(eps []endpoint) []endpoint {
	var ready, draining []endpoint
	for _, e := range eps {
		switch {
		case e.ready:
			ready = append(ready, e)
		case e.serving && e.terminating:
			draining = append(draining, e)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return draining
}

func local(eps []endpoint) []endpoint {
	var out []endpoint
	for _, e := range eps {
		if e.local {
			out = append(out, e)
		}
	}
	return out
}

func portString(p int32) string { return strconv.Itoa(int(p)) }
