package dns

import (
	"net/netip"
	"strings"
)

// kind says what a name under the cluster domain asks for.
type kind int

const (
	kindInvalid    kind = iota // under the domain, but no name Kubernetes DNS defines: NXDOMAIN
	kindApex                   // the cluster domain itself
	kindBranch                 // svc.<domain> or pod.<domain>: a name with no records of its own
	kindNamespace              // <ns>.svc.<domain>
	kindService                // <svc>.<ns>.svc.<domain>
	kindEndpoint               // <host>.<svc>.<ns>.svc.<domain>: a headless service's endpoint
	kindPort                   // _<port>._<proto>.<svc>.<ns>.svc.<domain>: SRV of a named port
	kindPod                    // <a-b-c-d>.<ns>.pod.<domain>
	kindNameserver             // ns.dns.<domain>: the cluster DNS server itself
)

// name is a parsed name under the cluster domain.
type name struct {
	kind                         kind
	namespace, service, endpoint string
	port, protocol               string // kindPort: without the leading underscores
	podIP                        netip.Addr
}

// parseName parses qname (lower case, fully qualified) against the
// cluster domain (lower case, fully qualified, "cluster.local."). ok is
// false for a name outside the domain, which is forwarded.
func parseName(qname, domain string) (n name, ok bool) {
	if qname == domain {
		return name{kind: kindApex}, true
	}
	rest, found := strings.CutSuffix(qname, "."+domain)
	if !found {
		return name{}, false
	}
	labels := strings.Split(rest, ".")
	last := len(labels) - 1
	switch {
	case rest == "ns.dns":
		return name{kind: kindNameserver}, true
	case last == 0 && (labels[0] == "svc" || labels[0] == "pod"):
		return name{kind: kindBranch}, true
	case labels[last] == "svc":
		return parseService(labels[:last]), true
	case labels[last] == "pod" && last == 2:
		return parsePod(labels[0], labels[1]), true
	}
	return name{}, true
}

// parseService parses the labels before "svc": [ns], [svc ns],
// [host svc ns] or [_port _proto svc ns].
func parseService(labels []string) name {
	for _, l := range labels {
		if l == "" {
			return name{}
		}
	}
	switch len(labels) {
	case 1:
		return name{kind: kindNamespace, namespace: labels[0]}
	case 2:
		return name{kind: kindService, service: labels[0], namespace: labels[1]}
	case 3:
		return name{kind: kindEndpoint, endpoint: labels[0], service: labels[1], namespace: labels[2]}
	case 4:
		port, ok1 := strings.CutPrefix(labels[0], "_")
		proto, ok2 := strings.CutPrefix(labels[1], "_")
		if ok1 && ok2 && port != "" && proto != "" {
			return name{kind: kindPort, port: port, protocol: proto, service: labels[2], namespace: labels[3]}
		}
	}
	return name{}
}

// parsePod parses <a-b-c-d>.<ns> (IPv6: the address with "-" for ":").
func parsePod(dashed, namespace string) name {
	sep := "."
	if strings.Count(dashed, "-") > 3 || strings.Contains(dashed, "--") {
		sep = ":"
	}
	ip, err := netip.ParseAddr(strings.ReplaceAll(dashed, "-", sep))
	if err != nil || namespace == "" {
		return name{}
	}
	return name{kind: kindPod, namespace: namespace, podIP: ip}
}

// parseReverse returns the IPv4 address an in-addr.arpa name asks for.
func parseReverse(qname string) (netip.Addr, bool) {
	rest, ok := strings.CutSuffix(qname, ".in-addr.arpa.")
	if !ok {
		return netip.Addr{}, false
	}
	labels := strings.Split(rest, ".")
	if len(labels) != 4 {
		return netip.Addr{}, false
	}
	for i, j := 0, 3; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	ip, err := netip.ParseAddr(strings.Join(labels, "."))
	return ip, err == nil && ip.Is4()
}
