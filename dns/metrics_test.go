package dns

import (
	"testing"

	mdns "github.com/miekg/dns"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

func TestMetrics(t *testing.T) {
	up := upstream(t)
	addr := startServer(t, up)
	server := "dns://" + addr // startServer's SOA query counts too
	exchange(t, "udp", addr, new(mdns.Msg).SetQuestion("web.shop.svc.cluster.local.", mdns.TypeA))
	exchange(t, "tcp", addr, new(mdns.Msg).SetQuestion("example.com.", mdns.TypeAAAA))
	exchange(t, "udp", addr, new(mdns.Msg).SetQuestion("nothing.nowhere.svc.cluster.local.", mdns.TypeA))

	for _, c := range []struct {
		what string
		got  metrics.CounterMetric
		want float64
	}{
		{"cluster A over UDP", requests.WithLabelValues(server, "cluster.local.", "udp", "1", "A"), 2},
		{"forwarded AAAA over TCP", requests.WithLabelValues(server, ".", "tcp", "1", "AAAA"), 1},
		{"cluster NOERROR answers", responses.WithLabelValues(server, "cluster.local.", "NOERROR", "kubernetes"), 2},
		{"cluster NXDOMAIN answers", responses.WithLabelValues(server, "cluster.local.", "NXDOMAIN", "kubernetes"), 1},
		{"forwarded answers", responses.WithLabelValues(server, ".", "NOERROR", "forward"), 1},
		{"queries to the resolver", forwardRequests.WithLabelValues(up), 1},
		{"answers from the resolver", forwardResponses.WithLabelValues("NOERROR", up), 1},
	} {
		v, err := testutil.GetCounterMetricValue(c.got)
		if err != nil || v != c.want {
			t.Errorf("%s: %v (%v), want %v", c.what, v, err, c.want)
		}
	}
	if n, err := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues(server, "cluster.local.", "A")); err != nil || n != 2 {
		t.Errorf("request duration of cluster A queries: %d observations (%v), want 2", n, err)
	}
}
