package agent

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/miekg/dns"

	"github.com/skiff-lab/skiff/proxy"
)

// NodeServiceView is a node's answer to `skiff explain service`: what its
// proxy routes for the Service, and what its cluster DNS server answers
// for the Service's name.
type NodeServiceView struct {
	Node string `json:"node"`
	// Proxy is what the proxy's rules hold for the Service; nil when they
	// hold nothing of it (no proxy, a headless Service, not synced yet).
	Proxy *proxy.ServiceView `json:"proxy,omitempty"`
	DNS   DNSAnswer          `json:"dns"`
}

// DNSAnswer is the node's cluster DNS server's answer to an A query.
type DNSAnswer struct {
	Name      string   `json:"name"`
	Server    string   `json:"server,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
	// Error is the query's failure, or its rcode when not NOERROR.
	Error string `json:"error,omitempty"`
}

// dnsTimeout bounds the node's query of its own DNS server.
const dnsTimeout = 2 * time.Second

// serviceViews answers the node API's GET
// /skiff/services/{namespace}/{name} with a NodeServiceView.
func (a *Agent) serviceViews() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		v := NodeServiceView{Node: a.cfg.NodeName}
		if p := a.proxier.Load(); p != nil {
			if sv, ok := p.Service(ns, name); ok {
				v.Proxy = &sv
			}
		}
		v.DNS = a.askDNS(r.Context(), name+"."+ns+".svc."+a.cfg.ClusterDomain)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
}

// askDNS asks the node's cluster DNS server for name's A records, as the
// node's pods would.
func (a *Agent) askDNS(ctx context.Context, name string) DNSAnswer {
	answer := DNSAnswer{Name: name}
	if a.cfg.ClusterDNS == "" {
		answer.Error = "the node serves no cluster DNS"
		return answer
	}
	answer.Server = net.JoinHostPort(a.cfg.ClusterDNS, "53")
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	ctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	defer cancel()
	in, _, err := (&dns.Client{Timeout: dnsTimeout}).ExchangeContext(ctx, q, answer.Server)
	switch {
	case err != nil:
		answer.Error = err.Error()
		return answer
	case in.Rcode != dns.RcodeSuccess:
		answer.Error = dns.RcodeToString[in.Rcode]
	}
	for _, rr := range in.Answer {
		if rec, ok := rr.(*dns.A); ok {
			answer.Addresses = append(answer.Addresses, rec.A.String())
		}
	}
	return answer
}
