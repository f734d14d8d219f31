package dns

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// upstream is a resolver on 127.0.0.1, UDP and TCP, that answers every
// query with 192.0.2.1, standing in for the node's resolvers.
func upstream(t *testing.T) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, q *mdns.Msg) {
		m := new(mdns.Msg).SetReply(q)
		m.Answer = []mdns.RR{&mdns.A{Hdr: header(q.Question[0].Name, mdns.TypeA), A: net.ParseIP("192.0.2.1")}}
		_ = w.WriteMsg(m)
	})
	for _, srv := range []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		go func() { _ = srv.ActivateAndServe() }()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// startServer runs a server on a free 127.0.0.1 port with the test zone,
// plus a headless service "many" with 200 endpoints.
func startServer(t *testing.T, upstreams ...string) string {
	z := testZone()
	cat := z.cat.(*fakeCatalog)
	cat.services["shop/many"] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "many"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	s := &discovery.EndpointSlice{}
	for i := range 200 {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)}})
	}
	cat.byService["shop/many"] = []*discovery.EndpointSlice{s}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := New(Config{Addr: addr, Upstreams: upstreams}, cat)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c := &mdns.Client{Timeout: time.Second}
	for range 50 {
		if _, _, err := c.Exchange(new(mdns.Msg).SetQuestion("cluster.local.", mdns.TypeSOA), addr); err == nil {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("DNS server did not answer")
	return ""
}

func exchange(t *testing.T, network, addr string, q *mdns.Msg) *mdns.Msg {
	t.Helper()
	c := &mdns.Client{Net: network, Timeout: 2 * time.Second}
	m, _, err := c.Exchange(q, addr)
	if err != nil {
		t.Fatalf("%s query: %v", network, err)
	}
	return m
}

func TestServerOverTheWire(t *testing.T) {
	addr := startServer(t, upstream(t))
	m := exchange(t, "udp", addr, new(mdns.Msg).SetQuestion("web.shop.svc.cluster.local.", mdns.TypeA))
	if len(m.Answer) != 1 || m.Answer[0].(*mdns.A).A.String() != "10.96.0.20" {
		t.Errorf("cluster name: %v", m)
	}
	m = exchange(t, "tcp", addr, new(mdns.Msg).SetQuestion("example.com.", mdns.TypeA))
	if len(m.Answer) != 1 || m.Answer[0].(*mdns.A).A.String() != "192.0.2.1" || m.Authoritative {
		t.Errorf("forwarded name: %v", m)
	}

	big := new(mdns.Msg).SetQuestion("many.shop.svc.cluster.local.", mdns.TypeA)
	if m = exchange(t, "udp", addr, big); !m.Truncated || len(m.Answer) >= 200 {
		t.Errorf("200 addresses over UDP: truncated %v with %d answers", m.Truncated, len(m.Answer))
	}
	if m = exchange(t, "tcp", addr, big); m.Truncated || len(m.Answer) != 200 {
		t.Errorf("200 addresses over TCP: truncated %v with %d answers", m.Truncated, len(m.Answer))
	}
	big.SetEdns0(4096, false)
	if m = exchange(t, "udp", addr, big); m.Truncated || len(m.Answer) != 200 {
		t.Errorf("200 addresses over UDP with EDNS0 4096: truncated %v with %d answers", m.Truncated, len(m.Answer))
	}

	two := new(mdns.Msg).SetQuestion("web.shop.svc.cluster.local.", mdns.TypeA)
	two.Question = append(two.Question, two.Question[0])
	if m = exchange(t, "udp", addr, two); m.Rcode != mdns.RcodeFormatError {
		t.Errorf("two questions: %s, want FORMERR", mdns.RcodeToString[m.Rcode])
	}
	update := new(mdns.Msg).SetUpdate("cluster.local.")
	if m = exchange(t, "udp", addr, update); m.Rcode != mdns.RcodeNotImplemented {
		t.Errorf("an update: %s, want NOTIMP", mdns.RcodeToString[m.Rcode])
	}
	garbage(t, addr)
}

// garbage sends bytes that are no DNS message; the server must stay up.
func garbage(t *testing.T, addr string) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range [][]byte{{0x12}, {0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff}, make([]byte, 600)} {
		_, _ = conn.Write(b)
	}
	m := exchange(t, "udp", addr, new(mdns.Msg).SetQuestion("web.shop.svc.cluster.local.", mdns.TypeA))
	if len(m.Answer) != 1 {
		t.Errorf("after garbage: %v", m)
	}
}

func TestNoUpstreamIsServfail(t *testing.T) {
	addr := startServer(t)
	if m := exchange(t, "udp", addr, new(mdns.Msg).SetQuestion("example.com.", mdns.TypeA)); m.Rcode != mdns.RcodeServerFailure {
		t.Errorf("no upstream: %s, want SERVFAIL", mdns.RcodeToString[m.Rcode])
	}
}

// FuzzReply feeds arbitrary messages to the query handler: it must not
// panic and must answer something that packs. No upstream is set, so
// nothing leaves the process.
func FuzzReply(f *testing.F) {
	for _, q := range []*mdns.Msg{
		new(mdns.Msg).SetQuestion("web.shop.svc.cluster.local.", mdns.TypeA),
		new(mdns.Msg).SetQuestion("_sql._tcp.db.shop.svc.cluster.local.", mdns.TypeSRV),
		new(mdns.Msg).SetQuestion("20.0.96.10.in-addr.arpa.", mdns.TypePTR),
		new(mdns.Msg).SetQuestion("10-244-1-5.shop.pod.cluster.local.", mdns.TypeANY),
	} {
		b, _ := q.Pack()
		f.Add(b)
	}
	z := testZone()
	s := &Server{upstream: &mdns.Client{Timeout: time.Millisecond}}
	s.zone.Store(z)
	f.Fuzz(func(t *testing.T, data []byte) {
		q := new(mdns.Msg)
		if q.Unpack(data) != nil {
			return
		}
		reply, _ := s.reply(q, "udp")
		if _, err := reply.Pack(); err != nil {
			t.Errorf("reply does not pack: %v", err)
		}
	})
}
