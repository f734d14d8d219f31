package dns

import (
	"net"
	"strconv"
	"time"

	mdns "github.com/miekg/dns"
	"k8s.io/component-base/metrics"

	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

// The DNS server's metrics carry CoreDNS's names and labels (its metrics
// and forward plugins), so that dashboards made for CoreDNS read them.
var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "requests_total",
		Help: "DNS queries by zone, transport, address family and query type.",
	}, []string{"server", "zone", "proto", "family", "type"})
	responses = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "responses_total",
		Help: "DNS answers by zone, response code and the plugin that answered.",
	}, []string{"server", "zone", "rcode", "plugin"})
	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "coredns", Subsystem: "dns", Name: "request_duration_seconds",
		Help:    "How long answering a query took, by zone and query type.",
		Buckets: timeBuckets,
	}, []string{"server", "zone", "type"})
	forwardRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "forward", Name: "requests_total",
		Help: "Queries sent to each of the node's resolvers.",
	}, []string{"to"})
	forwardResponses = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "coredns", Subsystem: "forward", Name: "responses_total",
		Help: "Answers from each of the node's resolvers, by response code.",
	}, []string{"rcode", "to"})
	forwardDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "coredns", Subsystem: "forward", Name: "request_duration_seconds",
		Help:    "How long each of the node's resolvers took to answer, by response code (an error if none came).",
		Buckets: timeBuckets,
	}, []string{"to", "rcode"})
)

// timeBuckets run from 0.25 ms to about 8 s, as CoreDNS's do.
var timeBuckets = metrics.ExponentialBuckets(0.00025, 2, 16)

// registerMetrics registers the metrics, with each resolver's query
// counter at zero.
func registerMetrics(upstreams []string) {
	skiffmetrics.Register(requests, responses, requestDuration, forwardRequests, forwardResponses, forwardDuration)
	for _, up := range upstreams {
		forwardRequests.WithLabelValues(up)
	}
}

// observe counts one answered query.
func (s *Server) observe(client net.Addr, q, reply *mdns.Msg, by answeredBy, took time.Duration) {
	server := s.label
	qtype := "other"
	if len(q.Question) == 1 {
		qtype = queryType(q.Question[0].Qtype)
	}
	proto, family := "udp", "1"
	if _, udp := client.(*net.UDPAddr); !udp {
		proto = "tcp"
	}
	if ip := addrIP(client); ip != nil && ip.To4() == nil {
		family = "2"
	}
	requests.WithLabelValues(server, by.zone, proto, family, qtype).Inc()
	responses.WithLabelValues(server, by.zone, rcodeName(reply.Rcode), by.plugin).Inc()
	requestDuration.WithLabelValues(server, by.zone, qtype).Observe(took.Seconds())
}

// forwarded counts one query to a resolver; resp is nil if none came.
func forwarded(to string, resp *mdns.Msg, took time.Duration) {
	rcode := "error"
	if resp != nil {
		rcode = rcodeName(resp.Rcode)
		forwardResponses.WithLabelValues(rcode, to).Inc()
	}
	forwardRequests.WithLabelValues(to).Inc()
	forwardDuration.WithLabelValues(to, rcode).Observe(took.Seconds())
}

// queryType names the common query types and counts the rest as other,
// as CoreDNS does, so that odd queries cannot grow the label set.
func queryType(t uint16) string {
	switch t {
	case mdns.TypeA, mdns.TypeAAAA, mdns.TypeCNAME, mdns.TypeMX, mdns.TypeNS, mdns.TypePTR,
		mdns.TypeSOA, mdns.TypeSRV, mdns.TypeTXT, mdns.TypeANY, mdns.TypeHTTPS, mdns.TypeSVCB:
		return mdns.TypeToString[t]
	}
	return "other"
}

func rcodeName(rcode int) string {
	if name, ok := mdns.RcodeToString[rcode]; ok {
		return name
	}
	return strconv.Itoa(rcode)
}

func addrIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.IP
	case *net.TCPAddr:
		return a.IP
	}
	return nil
}
