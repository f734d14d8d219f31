package dns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeCatalog answers from plain maps.
type fakeCatalog struct {
	services  map[string]*corev1.Service // ns/name
	byService map[string][]*discovery.EndpointSlice
}

func (f *fakeCatalog) service(ns, name string) (*corev1.Service, bool) {
	s, ok := f.services[ns+"/"+name]
	return s, ok
}
func (f *fakeCatalog) slices(ns, svc string) []*discovery.EndpointSlice {
	return f.byService[ns+"/"+svc]
}
func (f *fakeCatalog) hasNamespace(ns string) bool {
	for k := range f.services {
		if strings.HasPrefix(k, ns+"/") {
			return true
		}
	}
	return false
}
func (f *fakeCatalog) serviceByIP(ip string) (*corev1.Service, bool) {
	for _, s := range f.services {
		if slices.Contains(s.Spec.ClusterIPs, ip) {
			return s, true
		}
	}
	return nil, false
}

func testZone() *zone {
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	db := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone},
			Ports: []corev1.ServicePort{{Name: "sql", Port: 5432, Protocol: corev1.ProtocolTCP}}}}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}
	dbSlice := &discovery.EndpointSlice{
		Ports: []discovery.EndpointPort{{Name: new("sql"), Port: new(int32(5432))}},
		Endpoints: []discovery.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Hostname: new("db-0")},
			{Addresses: []string{"10.244.2.6"}},
			{Addresses: []string{"10.244.3.7"}, Conditions: discovery.EndpointConditions{Ready: new(false)}},
		},
	}
	cat := &fakeCatalog{
		services:  map[string]*corev1.Service{"shop/web": web, "shop/db": db, "shop/ext": ext},
		byService: map[string][]*discovery.EndpointSlice{"shop/db": {dbSlice}},
	}
	return &zone{domain: "cluster.local.", serviceCIDR: netip.MustParsePrefix("10.96.0.0/16"), self: netip.MustParseAddr("10.96.0.10"), cat: cat}
}

// records renders a section as "TYPE value" strings, sorted.
func records(rrs []mdns.RR) []string {
	var out []string
	for _, rr := range rrs {
		f := strings.Fields(rr.String())
		out = append(out, strings.Join(f[3:], " "))
	}
	slices.Sort(out)
	return out
}

func TestAnswers(t *testing.T) {
	z := testZone()
	for _, tc := range []struct {
		qname string
		qtype uint16
		rcode int
		want  []string
		extra []string
	}{
		{qname: "web.shop.svc.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.96.0.20"}},
		{qname: "WEB.Shop.svc.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.96.0.20"}},
		{qname: "web.shop.svc.cluster.local.", qtype: mdns.TypeAAAA},
		{qname: "web.shop.svc.cluster.local.", qtype: mdns.TypeMX},
		{qname: "nope.shop.svc.cluster.local.", qtype: mdns.TypeA, rcode: mdns.RcodeNameError},
		{qname: "web.nope.svc.cluster.local.", qtype: mdns.TypeA, rcode: mdns.RcodeNameError},
		{qname: "shop.svc.cluster.local.", qtype: mdns.TypeA},
		{qname: "nope.svc.cluster.local.", qtype: mdns.TypeA, rcode: mdns.RcodeNameError},
		{qname: "svc.cluster.local.", qtype: mdns.TypeA},
		{qname: "what.ever.cluster.local.", qtype: mdns.TypeA, rcode: mdns.RcodeNameError},
		{qname: "db.shop.svc.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.244.1.5", "A 10.244.2.6"}},
		{qname: "db-0.db.shop.svc.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.244.1.5"}},
		{qname: "10-244-2-6.db.shop.svc.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.244.2.6"}},
		{qname: "10-244-3-7.db.shop.svc.cluster.local.", qtype: mdns.TypeA, rcode: mdns.RcodeNameError},
		{qname: "_http._tcp.web.shop.svc.cluster.local.", qtype: mdns.TypeSRV,
			want: []string{"SRV 0 100 80 web.shop.svc.cluster.local."}, extra: []string{"A 10.96.0.20"}},
		{qname: "_http._udp.web.shop.svc.cluster.local.", qtype: mdns.TypeSRV, rcode: mdns.RcodeNameError},
		{qname: "_sql._tcp.db.shop.svc.cluster.local.", qtype: mdns.TypeSRV,
			want:  []string{"SRV 0 50 5432 10-244-2-6.db.shop.svc.cluster.local.", "SRV 0 50 5432 db-0.db.shop.svc.cluster.local."},
			extra: []string{"A 10.244.1.5", "A 10.244.2.6"}},
		{qname: "web.shop.svc.cluster.local.", qtype: mdns.TypeSRV,
			want: []string{"SRV 0 100 80 web.shop.svc.cluster.local."}, extra: []string{"A 10.96.0.20"}},
		{qname: "ext.shop.svc.cluster.local.", qtype: mdns.TypeA, want: []string{"CNAME db.example.com."}},
		{qname: "10-244-1-5.shop.pod.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.244.1.5"}},
		{qname: "20.0.96.10.in-addr.arpa.", qtype: mdns.TypePTR, want: []string{"PTR web.shop.svc.cluster.local."}},
		{qname: "99.0.96.10.in-addr.arpa.", qtype: mdns.TypePTR, rcode: mdns.RcodeNameError},
		{qname: "cluster.local.", qtype: mdns.TypeNS, want: []string{"NS ns.dns.cluster.local."}},
		{qname: "ns.dns.cluster.local.", qtype: mdns.TypeA, want: []string{"A 10.96.0.10"}},
	} {
		t.Run(tc.qname+"/"+mdns.TypeToString[tc.qtype], func(t *testing.T) {
			q := new(mdns.Msg).SetQuestion(tc.qname, tc.qtype)
			m := z.answer(q)
			if m == nil {
				t.Fatal("forwarded")
			}
			if m.Rcode != tc.rcode || !slices.Equal(records(m.Answer), tc.want) || !slices.Equal(records(m.Extra), tc.extra) {
				t.Errorf("rcode %s answer %v extra %v; want %s %v %v", mdns.RcodeToString[m.Rcode], records(m.Answer), records(m.Extra),
					mdns.RcodeToString[tc.rcode], tc.want, tc.extra)
			}
			if len(m.Answer) == 0 && (len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != mdns.TypeSOA) {
				t.Errorf("a negative answer without the zone's SOA: %v", m.Ns)
			}
			if !m.Authoritative || m.Id != q.Id {
				t.Errorf("authoritative %v, id %d for %d", m.Authoritative, m.Id, q.Id)
			}
		})
	}
}

func TestOutsideTheClusterIsForwarded(t *testing.T) {
	z := testZone()
	for _, qname := range []string{"example.com.", "5.1.168.192.in-addr.arpa.", "cluster.local.example."} {
		if m := z.answer(new(mdns.Msg).SetQuestion(qname, mdns.TypeA)); m != nil {
			t.Errorf("%s answered locally: %v", qname, m)
		}
	}
}
