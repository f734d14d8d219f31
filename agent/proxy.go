package agent

import (
	"context"
	"log/slog"

	"github.com/skiff-lab/skiff/proxy"
)

// startProxy runs the node's service proxy in the background, once the
// node has its pod CIDR (the proxy tells the node's pods' traffic by it),
// unless it is disabled. Its rules outlive the agent; `skiff agent
// --cleanup` removes them.
func (a *Agent) startProxy(ctx context.Context, podCIDR string) error {
	if a.cfg.DisableProxy {
		return nil
	}
	p, err := proxy.New(proxy.Config{
		NodeName: a.cfg.NodeName, PodCIDR: podCIDR, ServiceCIDR: a.cfg.ServiceCIDR,
		MinSyncPeriod: a.cfg.ProxyMinSyncPeriod, SyncPeriod: a.cfg.ProxySyncPeriod,
	})
	if err != nil {
		return err
	}
	go func() {
		if err := p.Run(ctx, a.client); err != nil {
			slog.Error("service proxy stopped", "node", a.cfg.NodeName, "err", err)
		}
	}()
	return nil
}
