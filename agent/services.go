package agent

import (
	"context"
	"log/slog"
	"net"
	"os"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/dns"
	"github.com/skiff-lab/skiff/podtrace"
	"github.com/skiff-lab/skiff/proxy"
)

// startServices makes the cluster's Services work on this node, once it
// has its pod CIDR (the proxy tells the node's pods' traffic by it): the
// service proxy (unless DisableProxy) and the cluster DNS server on the
// ClusterDNS address (unless there is none), fed by one shared informer on
// Services and one on EndpointSlices. The proxy's rules and the DNS
// address outlive the agent; `skiff agent --cleanup` removes them.
func (a *Agent) startServices(ctx context.Context, podCIDR string) error {
	if a.cfg.DisableProxy && a.cfg.ClusterDNS == "" {
		return nil
	}
	inf := informers.NewSharedInformerFactory(a.client, 0)
	services, slices := inf.Core().V1().Services().Informer(), inf.Discovery().V1().EndpointSlices().Informer()
	run := []func(context.Context) error{}
	if !a.cfg.DisableProxy {
		p, err := proxy.New(proxy.Config{
			NodeName: a.cfg.NodeName, PodCIDR: podCIDR, ServiceCIDR: a.cfg.ServiceCIDR, ClusterDNS: a.cfg.ClusterDNS,
			MinSyncPeriod: a.cfg.ProxyMinSyncPeriod, SyncPeriod: a.cfg.ProxySyncPeriod, HealthzAddress: a.cfg.ProxyHealthzAddress,
			Synced: proxySteps(podtrace.NewTracer(a.tracing, "proxy", a.cfg.NodeName)),
		}, services, slices)
		if err != nil {
			return err
		}
		a.proxier.Store(p)
		run = append(run, p.Run)
	}
	if a.cfg.ClusterDNS != "" {
		srv, err := a.informerDNS(ctx, services, slices)
		if err != nil {
			return err
		}
		if srv != nil {
			run = append(run, srv.Run)
		}
	}
	inf.Start(ctx.Done())
	for _, r := range run {
		go func() {
			if err := r(ctx); err != nil {
				slog.Error("node service stopped", "node", a.cfg.NodeName, "err", err)
			}
		}()
	}
	return nil
}

// informerDNS gives the cluster DNS server the informers' catalog, and
// keeps a copy of it on disk. It returns the server to run, or nil when
// the server started from the saved catalog runs already: that one
// switches to the informers' catalog once they have synced.
func (a *Agent) informerDNS(ctx context.Context, services, slices cache.SharedIndexInformer) (*dns.Server, error) {
	cat, err := dns.NewCatalog(services, slices)
	if err != nil {
		return nil, err
	}
	if err := a.saveDNSCatalog(ctx, cat, services, slices); err != nil {
		return nil, err
	}
	if a.savedDNS == nil {
		return a.dnsServer(cat)
	}
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), services.HasSynced, slices.HasSynced) {
			a.savedDNS.SetCatalog(cat)
			slog.Info("cluster DNS answers from the API server's Services again")
		}
	}()
	return nil, nil
}

// dnsServer binds the cluster DNS address on the node and builds the
// server, which forwards what is not the cluster's to the node's own
// resolvers.
func (a *Agent) dnsServer(cat *dns.Catalog) (*dns.Server, error) {
	if err := dns.Bind(a.cfg.ClusterDNS); err != nil {
		return nil, err
	}
	host, _ := os.ReadFile(a.cfg.ResolvConf)
	var upstreams []string
	for _, ns := range parseResolvConf(host).nameservers {
		if ns != a.cfg.ClusterDNS {
			upstreams = append(upstreams, net.JoinHostPort(ns, "53"))
		}
	}
	return dns.New(dns.Config{Addr: a.cfg.ClusterDNS, Domain: a.cfg.ClusterDomain, ServiceCIDR: a.cfg.ServiceCIDR, Upstreams: upstreams}, cat)
}
