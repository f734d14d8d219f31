package proxy

import (
	"context"
	"log/slog"
	"time"
)

// maxRetryDelay bounds the back-off between failed syncs.
const maxRetryDelay = 30 * time.Second

// loop syncs when kicked, at most once per MinSyncPeriod, fully every
// SyncPeriod, until ctx ends. The first sync is full. A failed partial
// sync is followed at once by a full one; a failed full sync is retried
// with back-off (MinSyncPeriod doubling up to maxRetryDelay), its error
// logged once per step.
func (p *Proxier) loop(ctx context.Context) {
	clk := p.cfg.Clock
	periodic := clk.NewTicker(p.cfg.SyncPeriod)
	defer periodic.Stop()
	retry := clk.NewTimer(0) // the first, full sync
	defer retry.Stop()
	delay := p.cfg.MinSyncPeriod
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.trigger:
		case <-periodic.C():
			p.needFull = true
		case <-retry.C():
		}
		if wait := last.Add(p.cfg.MinSyncPeriod).Sub(clk.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-clk.After(wait):
			}
		}
		last = clk.Now()
		wasFull := p.needFull
		err := p.sync(ctx)
		switch {
		case err == nil:
			delay = p.cfg.MinSyncPeriod
		case ctx.Err() != nil:
			return
		case !wasFull:
			slog.Warn("proxy partial sync failed; syncing fully", "node", p.cfg.NodeName, "err", err)
			retry.Reset(0)
		default:
			slog.Error("proxy sync failed", "node", p.cfg.NodeName, "err", err, "retryIn", delay)
			retry.Reset(delay)
			delay = min(2*delay, maxRetryDelay)
		}
	}
}

// sync brings the kernel's rules up to date with the changes since the
// last sync; everything when a full sync is due. Nothing changed and no
// full sync due: nothing is written.
func (p *Proxier) sync(ctx context.Context) error {
	start := time.Now()
	full := p.needFull
	taken, tookAll := p.changes.take(full), full
	changed, stale := p.st.apply(taken, p.cfg.NodeName, p.cfg.ClusterDNS)
	if large := p.st.endpointCount() > largeClusterEndpoints; large != p.rules.large {
		p.rules.large, full = large, true // every chain in the same style
	}
	if !full && len(changed) == 0 {
		p.publish(taken, false, p.cfg.Clock.Now()) // the rules are already what the changes make
		return nil
	}
	var inKernel map[string]bool
	if full {
		// A full sync also sets up the base and deletes any service chain
		// it does not use: whoever left it when the kernel's chains are
		// not known (the first sync, or after a failed one), else those
		// the last sync left.
		p.needFull = true
		if err := p.kernel.ensureBase(); err != nil {
			return err
		}
		inKernel = chainsOf(p.ports)
		if !p.known {
			var err error
			if inKernel, err = p.kernel.serviceChains(ctx); err != nil {
				return err
			}
		}
	}
	rs := planRules(p.rules, p.st, changed, full, p.ports, inKernel)
	if err := p.kernel.restore(ctx, rs.payload()); err != nil {
		restoreFailures.Inc()
		p.needFull, p.known = true, false
		return err
	}
	p.ports, p.needFull, p.known = rs.ports, false, true
	p.publish(taken, tookAll, p.cfg.Clock.Now())
	if p.cfg.Synced != nil && len(p.st.ready) > 0 {
		p.cfg.Synced(p.st.ready, start, time.Now())
	}
	p.st.ready = nil
	p.health.synced(p.cfg.Clock.Now())
	p.health.setPorts(p.st)
	if err := p.forget(stale); err != nil {
		slog.Warn("proxy: stale UDP flows kept", "node", p.cfg.NodeName, "err", err)
	}
	kind := "partial"
	if full {
		kind = "full"
	}
	syncDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	rulesWritten.Observe(float64(rs.rules()))
	lastSync.SetToCurrentTime()
	slog.Debug("proxy synced", "node", p.cfg.NodeName, "kind", kind, "ports", len(changed), "rules", rs.rules(), "took", time.Since(start))
	return nil
}
