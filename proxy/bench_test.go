package proxy

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// BenchmarkSync measures the proxier's syncs against the real kernel, in a
// network namespace of its own: an in-process rig (the proxier without
// informers; the changes are fed as the informers would), with N services
// of 10 endpoints each. full rewrites everything; one-endpoint is the
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
			if n > 1000 {
				// iptables-nft 1.8.9's --noflush restore grows with the
				// square of the chains it writes: 10,000 services (110,000
				// chains) take many minutes. The namespace is the
				// benchmark's own, so the rules are loaded once without
				// --noflush, and the full sync is not measured.
				p.kernel = flushingKernel{}
			}
			mustSync(b, p)
			p.kernel = kernel{}
			b.Run("full", func(b *testing.B) {
				if n > 1000 {
					b.Skip("full sync beyond 1000 services: see above")
				}
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
// pod range, none of which exist: rules only.
func benchSlice(service string, i, endpoints int) *discovery.EndpointSlice {
	ips := make([]string, endpoints)
	for j := range ips {
		k := i*10 + j
		ips[j] = fmt.Sprintf("10.%d.%d.%d", 100+k/65536, k/256%256, k%256)
	}
	s := labSlice(service, ips...)
	for j := range s.Endpoints {
		s.Endpoints[j].Conditions.Ready = new(true)
	}
	s.Ports[0].Protocol = new(corev1.ProtocolTCP)
	return s
}

// flushingKernel loads rules with a plain iptables-restore, which replaces
// whole tables: only for a namespace holding nothing else.
type flushingKernel struct{ kernel }

func (flushingKernel) restore(ctx context.Context, payload []byte) error {
	cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5")
	cmd.Stdin = bytes.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %w: %s", err, out)
	}
	return nil
}
