package proxy

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// BenchmarkSync measures the proxier's syncs against the real kernel, in a
// network namespace of its own: an in-process rig (the proxier without
// informers; the changes are fed as the informers would), with N services
// of 10 endpoints each, one of them on this node (as in a ten-node
// cluster: the others get no KUBE-SEP chain here). full rewrites everything; one-endpoint is the
// partial sync after one slice lost an endpoint, from the change being
// recorded to iptables-restore returning. heap-MB is the live heap with
// the proxier holding N services. Needs root.
func BenchmarkSync(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			l := newLab(b, 0)
			l.enter(b)
			p := labProxier(b)
			for i := range n {
				name := fmt.Sprintf("svc-%d", i)
				p.changes.service(labService(name, fmt.Sprintf("10.96.%d.%d", i/250+1, i%250+1)), false)
				p.changes.slice(benchSlice(name, i, 10), false)
			}
			mustSync(b, p)
			b.Run("full", func(b *testing.B) {
				l.enter(b)
				for b.Loop() {
					p.needFull = true
					mustSync(b, p)
				}
				reportHeap(b, p)
			})
			b.Run("one-endpoint", func(b *testing.B) {
				l.enter(b)
				i := 0
				for b.Loop() {
					// Alternate between 9 and 10 endpoints on one service.
					p.changes.slice(benchSlice("svc-7", 7, 9+i%2), false)
					mustSync(b, p)
					i++
				}
				reportHeap(b, p)
			})
		})
	}
}

// reportHeap reports the live heap while p is held.
func reportHeap(b *testing.B, p *Proxier) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
	runtime.KeepAlive(p)
}

// benchSlice is service i's slice with endpoints addresses of the lab's
// pod range, none of which exist (rules only), on nodes n1 (the lab's
// node) to n10.
func benchSlice(service string, i, endpoints int) *discovery.EndpointSlice {
	ips := make([]string, endpoints)
	for j := range ips {
		k := i*10 + j
		ips[j] = fmt.Sprintf("10.%d.%d.%d", 100+k/65536, k/256%256, k%256)
	}
	s := labSlice(service, ips...)
	for j := range s.Endpoints {
		s.Endpoints[j].Conditions.Ready = new(true)
		s.Endpoints[j].NodeName = new(fmt.Sprintf("n%d", j+1))
	}
	s.Ports[0].Protocol = new(corev1.ProtocolTCP)
	return s
}
