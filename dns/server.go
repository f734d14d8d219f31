// Package dns is the cluster DNS server each agent runs for its node's
// pods, in the way NodeLocal DNSCache places one per node: bound to the
// cluster DNS address on the node itself, so that a pod's query never
// crosses to another node. Names under the cluster domain are answered from
// the agent's informer caches of Services and EndpointSlices, as CoreDNS's
// kubernetes plugin answers them (answer.go; parsing in names.go); reverse
// names of the service CIDR too. Everything else is forwarded to the
// node's own resolvers. The caches outlive an API server outage, and so do
// the answers.
package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
)

// Config is what a node's DNS server needs.
type Config struct {
	// Addr is the cluster DNS address the server listens on, UDP and TCP
	// port 53 unless it names a port.
	Addr string
	// Domain is the cluster domain; default cluster.local.
	Domain string
	// ServiceCIDR's reverse names are answered; default 10.96.0.0/16.
	ServiceCIDR string
	// Upstreams are the node's resolvers (host:port) names outside the
	// cluster go to.
	Upstreams []string
}

// Server answers DNS queries for one node.
type Server struct {
	cfg      Config
	label    string // the server label of its metrics, dns://<addr>
	zone     atomic.Pointer[zone]
	upstream *mdns.Client
}

// New returns a server answering from cat.
func New(cfg Config, cat catalog) (*Server, error) {
	if cfg.Domain == "" {
		cfg.Domain = "cluster.local"
	}
	if cfg.ServiceCIDR == "" {
		cfg.ServiceCIDR = "10.96.0.0/16"
	}
	cidr, err := netip.ParsePrefix(cfg.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("service CIDR: %w", err)
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host, cfg.Addr = cfg.Addr, net.JoinHostPort(cfg.Addr, "53")
	}
	self, err := netip.ParseAddr(host)
	if err != nil {
		return nil, fmt.Errorf("DNS address: %w", err)
	}
	z := &zone{domain: strings.ToLower(mdns.Fqdn(cfg.Domain)), serviceCIDR: cidr, self: self, cat: cat}
	registerMetrics(cfg.Upstreams)
	s := &Server{cfg: cfg, label: "dns://" + cfg.Addr, upstream: &mdns.Client{Timeout: 2 * time.Second}}
	s.zone.Store(z)
	return s, nil
}

// SetCatalog makes the server answer from cat from now on: the informers'
// catalog once they have synced, after a saved one (LoadCatalog) served
// while they could not.
func (s *Server) SetCatalog(cat *Catalog) {
	z := *s.zone.Load()
	z.cat = cat
	s.zone.Store(&z)
}

// Run serves on UDP and TCP until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	udp, err := net.ListenPacket("udp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	tcp, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		udp.Close()
		return fmt.Errorf("dns: %w", err)
	}
	servers := []*mdns.Server{{PacketConn: udp, Handler: s}, {Listener: tcp, Handler: s}}
	errs := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errs <- srv.ActivateAndServe() }()
	}
	slog.Info("cluster DNS serving", "addr", s.cfg.Addr, "domain", s.cfg.Domain, "upstreams", s.cfg.Upstreams)
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	for _, srv := range servers {
		_ = srv.Shutdown()
	}
	return err
}

// ServeDNS answers one query: from the cluster's names, or by forwarding.
// A UDP answer larger than the client takes is truncated (TC set), so
// that it asks again over TCP.
func (s *Server) ServeDNS(w mdns.ResponseWriter, q *mdns.Msg) {
	start := time.Now()
	reply, by := s.reply(q, w.RemoteAddr().Network())
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := mdns.MinMsgSize
		if opt := q.IsEdns0(); opt != nil {
			size = max(size, int(opt.UDPSize()))
		}
		reply.Truncate(size)
	}
	// Counted before the answer leaves, so that a client that has its
	// answer also sees it counted.
	s.observe(w.RemoteAddr(), q, reply, by, time.Since(start))
	_ = w.WriteMsg(reply)
}

// answeredBy is what answered a query: the zone it counts under and the
// plugin, in CoreDNS's terms (kubernetes for the cluster's names, forward
// for the node's resolvers, none for a malformed query).
type answeredBy struct{ zone, plugin string }

// reply returns the answer to q: FORMERR without exactly one question,
// NOTIMP for other opcodes, the cluster's answer, or the upstream's.
func (s *Server) reply(q *mdns.Msg, network string) (*mdns.Msg, answeredBy) {
	switch {
	case q.Opcode != mdns.OpcodeQuery:
		return new(mdns.Msg).SetRcode(q, mdns.RcodeNotImplemented), answeredBy{zone: "."}
	case len(q.Question) != 1:
		return new(mdns.Msg).SetRcode(q, mdns.RcodeFormatError), answeredBy{zone: "."}
	}
	z := s.zone.Load()
	if m := z.answer(q); m != nil {
		return m, answeredBy{zone: z.domain, plugin: "kubernetes"}
	}
	return s.forward(q, network), answeredBy{zone: ".", plugin: "forward"}
}

// forward asks the node's resolvers in turn; SERVFAIL when none answers.
func (s *Server) forward(q *mdns.Msg, network string) *mdns.Msg {
	c := *s.upstream
	if strings.HasPrefix(network, "tcp") {
		c.Net = "tcp"
	}
	var errs []error
	for _, up := range s.cfg.Upstreams {
		start := time.Now()
		resp, _, err := c.Exchange(q, up)
		forwarded(up, resp, time.Since(start))
		if err == nil {
			resp.Id = q.Id
			return resp
		}
		errs = append(errs, err)
	}
	slog.Debug("dns forward failed", "name", q.Question[0].Name, "err", errors.Join(errs...))
	return new(mdns.Msg).SetRcode(q, mdns.RcodeServerFailure)
}
