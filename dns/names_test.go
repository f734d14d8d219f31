package dns

import (
	"net/netip"
	"testing"
)

func TestParseName(t *testing.T) {
	const domain = "cluster.local."
	for _, tc := range []struct {
		qname string
		want  name
		ok    bool
	}{
		{"cluster.local.", name{kind: kindApex}, true},
		{"svc.cluster.local.", name{kind: kindBranch}, true},
		{"pod.cluster.local.", name{kind: kindBranch}, true},
		{"ns.dns.cluster.local.", name{kind: kindNameserver}, true},
		{"shop.svc.cluster.local.", name{kind: kindNamespace, namespace: "shop"}, true},
		{"web.shop.svc.cluster.local.", name{kind: kindService, service: "web", namespace: "shop"}, true},
		{"web-0.web.shop.svc.cluster.local.", name{kind: kindEndpoint, endpoint: "web-0", service: "web", namespace: "shop"}, true},
		{"_http._tcp.web.shop.svc.cluster.local.", name{kind: kindPort, port: "http", protocol: "tcp", service: "web", namespace: "shop"}, true},
		{"http.tcp.web.shop.svc.cluster.local.", name{}, true},
		{"_._tcp.web.shop.svc.cluster.local.", name{}, true},
		{"a.b.c.d.e.svc.cluster.local.", name{}, true},
		{"10-244-1-5.shop.pod.cluster.local.", name{kind: kindPod, namespace: "shop", podIP: netip.MustParseAddr("10.244.1.5")}, true},
		{"fd00--5.shop.pod.cluster.local.", name{kind: kindPod, namespace: "shop", podIP: netip.MustParseAddr("fd00::5")}, true},
		{"10-244-1.shop.pod.cluster.local.", name{}, true},
		{"web.pod.cluster.local.", name{}, true},
		{"nothing.cluster.local.", name{}, true},
		{"web.shop.svc.cluster.local.example.", name{}, false},
		{"example.com.", name{}, false},
		{"local.", name{}, false},
	} {
		got, ok := parseName(tc.qname, domain)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseName(%q) = %+v, %v; want %+v, %v", tc.qname, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseReverse(t *testing.T) {
	for qname, want := range map[string]string{
		"20.0.96.10.in-addr.arpa.": "10.96.0.20",
		"0.96.10.in-addr.arpa.":    "",
		"x.0.96.10.in-addr.arpa.":  "",
		"example.com.":             "",
	} {
		ip, ok := parseReverse(qname)
		if (want == "") == ok || (ok && ip.String() != want) {
			t.Errorf("parseReverse(%q) = %v, %v; want %q", qname, ip, ok, want)
		}
	}
}
