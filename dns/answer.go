package dns

import (
	"net/netip"
	"strings"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// ttl is the TTL of every answer, CoreDNS's default for cluster names.
const ttl = 5

// catalog is what answers are made from: the cluster's Services and
// EndpointSlices, from informer caches (never an API call per query).
type catalog interface {
	service(namespace, name string) (*corev1.Service, bool)
	slices(namespace, service string) []*discovery.EndpointSlice
	hasNamespace(namespace string) bool // some service lives in it
	serviceByIP(ip string) (*corev1.Service, bool)
}

// zone answers for the cluster domain and the reverse names of the
// service CIDR.
type zone struct {
	domain      string       // "cluster.local.", lower case
	serviceCIDR netip.Prefix // reverse names in it are answered, not forwarded
	self        netip.Addr   // the cluster DNS address (ns.dns.<domain>)
	cat         catalog
}

// answer returns the reply to q, a query with one question, or nil when
// the name is not the cluster's and the query is to be forwarded.
func (z *zone) answer(q *mdns.Msg) *mdns.Msg {
	question := q.Question[0]
	qname := strings.ToLower(mdns.Fqdn(question.Name))
	m := new(mdns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if ip, ok := parseReverse(qname); ok {
		if !z.serviceCIDR.Contains(ip) {
			return nil
		}
		return z.reverse(m, question, ip)
	}
	n, ok := parseName(qname, z.domain)
	if !ok {
		return nil
	}
	records, exists := z.lookup(n, question)
	switch {
	case !exists:
		m.Rcode = mdns.RcodeNameError
		m.Ns = []mdns.RR{z.soa()}
	case len(records) == 0:
		m.Ns = []mdns.RR{z.soa()} // the name exists, without records of this type
	default:
		m.Answer = records
		m.Extra = z.extra(records)
	}
	return m
}

// lookup returns the records of type question.Qtype at the name n, and
// whether the name exists at all.
func (z *zone) lookup(n name, question mdns.Question) ([]mdns.RR, bool) {
	qname, qtype := question.Name, question.Qtype
	switch n.kind {
	case kindApex:
		return z.apex(qname, qtype), true
	case kindBranch:
		return nil, true
	case kindNameserver:
		return addressRecords(qname, qtype, []string{z.self.String()}), true
	case kindNamespace:
		return nil, z.cat.hasNamespace(n.namespace)
	case kindPod:
		return addressRecords(qname, qtype, []string{n.podIP.String()}), true
	case kindService, kindEndpoint, kindPort:
		svc, ok := z.cat.service(n.namespace, n.service)
		if !ok {
			return nil, false
		}
		return z.serviceRecords(n, svc, qname, qtype)
	}
	return nil, false
}

func (z *zone) apex(qname string, qtype uint16) []mdns.RR {
	switch qtype {
	case mdns.TypeSOA:
		return []mdns.RR{z.soa()}
	case mdns.TypeNS:
		return []mdns.RR{&mdns.NS{Hdr: header(qname, mdns.TypeNS), Ns: "ns.dns." + z.domain}}
	}
	return nil
}

// serviceRecords answers the names of one service: its address (cluster
// IP, the ready endpoints of a headless service, or a CNAME to an
// ExternalName), its endpoints by hostname, and SRV records of its ports.
func (z *zone) serviceRecords(n name, svc *corev1.Service, qname string, qtype uint16) ([]mdns.RR, bool) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if n.kind != kindService {
			return nil, false
		}
		return []mdns.RR{&mdns.CNAME{Hdr: header(qname, mdns.TypeCNAME), Target: mdns.Fqdn(svc.Spec.ExternalName)}}, true
	}
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	var eps []endpointRecord
	if headless {
		eps = readyEndpoints(z.cat.slices(svc.Namespace, svc.Name))
	}
	switch n.kind {
	case kindEndpoint:
		var ips []string
		for _, e := range eps {
			if e.host == n.endpoint {
				ips = append(ips, e.ip)
			}
		}
		return addressRecords(qname, qtype, ips), len(ips) > 0
	case kindPort:
		if qtype != mdns.TypeSRV && qtype != mdns.TypeANY {
			return nil, hasPort(svc, n.port, n.protocol)
		}
		srv := z.srvRecords(svc, n.port, n.protocol, eps, qname)
		return srv, len(srv) > 0
	}
	if qtype == mdns.TypeSRV {
		return z.srvRecords(svc, "", "", eps, qname), true
	}
	if !headless {
		return addressRecords(qname, qtype, svc.Spec.ClusterIPs), true
	}
	var ips []string
	for _, e := range eps {
		ips = append(ips, e.ip)
	}
	return addressRecords(qname, qtype, ips), true
}

// endpointRecord is a ready endpoint of a headless service: its address
// and the label it is known by (its hostname, or its dashed address).
type endpointRecord struct {
	ip, host string
	ports    []discovery.EndpointPort
}

func readyEndpoints(slices []*discovery.EndpointSlice) []endpointRecord {
	var out []endpointRecord
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 || (e.Conditions.Ready != nil && !*e.Conditions.Ready) {
				continue
			}
			ip := e.Addresses[0]
			host := strings.NewReplacer(".", "-", ":", "-").Replace(ip)
			if e.Hostname != nil && *e.Hostname != "" {
				host = *e.Hostname
			}
			out = append(out, endpointRecord{ip: ip, host: host, ports: s.Ports})
		}
	}
	return out
}

// srvRecords returns the SRV records of svc's named ports (only port and
// protocol when given): one pointing at the service for a cluster IP, one
// per ready endpoint for a headless service.
func (z *zone) srvRecords(svc *corev1.Service, port, protocol string, eps []endpointRecord, qname string) []mdns.RR {
	base := svc.Name + "." + svc.Namespace + ".svc." + z.domain
	var out []mdns.RR
	for _, p := range svc.Spec.Ports {
		if p.Name == "" || (port != "" && (p.Name != port || !strings.EqualFold(string(p.Protocol), protocol))) {
			continue
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			out = append(out, srv(qname, base, uint16(p.Port), 100))
			continue
		}
		for _, e := range eps {
			if num, ok := endpointPort(e.ports, p.Name); ok {
				out = append(out, srv(qname, e.host+"."+base, uint16(num), 0))
			}
		}
	}
	weight := uint16(100 / max(1, len(out)))
	for _, r := range out {
		r.(*mdns.SRV).Weight = weight
	}
	return out
}

func srv(qname, target string, port, weight uint16) *mdns.SRV {
	return &mdns.SRV{Hdr: header(qname, mdns.TypeSRV), Priority: 0, Weight: weight, Port: port, Target: target}
}

func endpointPort(ports []discovery.EndpointPort, name string) (int32, bool) {
	for _, p := range ports {
		if p.Name != nil && *p.Name == name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

func hasPort(svc *corev1.Service, port, protocol string) bool {
	for _, p := range svc.Spec.Ports {
		if p.Name == port && strings.EqualFold(string(p.Protocol), protocol) {
			return true
		}
	}
	return false
}

// extra returns the addresses of SRV targets, for the additional section.
func (z *zone) extra(records []mdns.RR) []mdns.RR {
	var out []mdns.RR
	for _, r := range records {
		s, ok := r.(*mdns.SRV)
		if !ok {
			continue
		}
		n, _ := parseName(s.Target, z.domain)
		q := mdns.Question{Name: s.Target, Qtype: mdns.TypeA, Qclass: mdns.ClassINET}
		if rrs, _ := z.lookup(n, q); len(rrs) > 0 {
			out = append(out, rrs...)
		}
	}
	return out
}

// reverse answers a PTR query for an address of the service CIDR: the
// name of the service holding it, else NXDOMAIN.
func (z *zone) reverse(m *mdns.Msg, q mdns.Question, ip netip.Addr) *mdns.Msg {
	svc, ok := z.cat.serviceByIP(ip.String())
	if !ok {
		m.Rcode = mdns.RcodeNameError
		m.Ns = []mdns.RR{z.soa()}
		return m
	}
	if q.Qtype == mdns.TypePTR || q.Qtype == mdns.TypeANY {
		m.Answer = []mdns.RR{&mdns.PTR{Hdr: header(q.Name, mdns.TypePTR), Ptr: svc.Name + "." + svc.Namespace + ".svc." + z.domain}}
	}
	return m
}

// addressRecords returns A (and AAAA) records for ips, of the type asked.
func addressRecords(qname string, qtype uint16, ips []string) []mdns.RR {
	var out []mdns.RR
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		switch {
		case ip.Is4() && (qtype == mdns.TypeA || qtype == mdns.TypeANY):
			out = append(out, &mdns.A{Hdr: header(qname, mdns.TypeA), A: ip.AsSlice()})
		case ip.Is6() && (qtype == mdns.TypeAAAA || qtype == mdns.TypeANY):
			out = append(out, &mdns.AAAA{Hdr: header(qname, mdns.TypeAAAA), AAAA: ip.AsSlice()})
		}
	}
	return out
}

func header(qname string, rrtype uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: qname, Rrtype: rrtype, Class: mdns.ClassINET, Ttl: ttl}
}

// soa is the zone's SOA record, sent with negative answers.
func (z *zone) soa() mdns.RR {
	return &mdns.SOA{Hdr: header(z.domain, mdns.TypeSOA), Ns: "ns.dns." + z.domain, Mbox: "hostmaster." + z.domain,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ttl}
}
