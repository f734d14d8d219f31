package agent

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/dns"
)

// A node's DNS answers from the agent's informers. So that it keeps
// answering when the agent restarts while no API server can be reached,
// the agent saves the informers' catalog to a file whenever it changed (at
// most every dnsSaveEvery), and at start, before it reaches the server,
// serves DNS from that file until the informers have synced.
const dnsSaveEvery = 10 * time.Second

func (a *Agent) dnsCatalogPath() string {
	return filepath.Join(a.cfg.DataDir, "agent", "dns-catalog.json")
}

// serveSavedDNS starts the cluster DNS server from the saved catalog, if
// there is one: at start, before the API server is reached.
func (a *Agent) serveSavedDNS(ctx context.Context) error {
	if a.cfg.ClusterDNS == "" {
		return nil
	}
	cat, n, err := dns.LoadCatalog(a.dnsCatalogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		slog.Warn("saved DNS catalog unreadable; DNS waits for the API server", "err", err)
		return nil
	}
	srv, err := a.dnsServer(cat)
	if err != nil {
		return err
	}
	a.savedDNS = srv
	slog.Info("cluster DNS answers from the saved catalog until the API server is reached", "services", n)
	go func() {
		if err := srv.Run(ctx); err != nil {
			slog.Error("cluster DNS stopped", "node", a.cfg.NodeName, "err", err)
		}
	}()
	return nil
}

// saveDNSCatalog saves cat once the informers have synced and then
// whenever they changed, until ctx ends. A failed save is logged once
// until one succeeds.
func (a *Agent) saveDNSCatalog(ctx context.Context, cat *dns.Catalog, informers ...cache.SharedIndexInformer) error {
	var changed atomic.Bool
	synced := make([]cache.InformerSynced, 0, len(informers))
	for _, inf := range informers {
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { changed.Store(true) },
			UpdateFunc: func(any, any) { changed.Store(true) },
			DeleteFunc: func(any) { changed.Store(true) },
		})
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced)
	}
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		failing := false
		for {
			if changed.Swap(false) {
				err := cat.Save(a.dnsCatalogPath())
				if err != nil && !failing {
					slog.Warn("saving the DNS catalog", "err", err)
				}
				failing = err != nil
				if failing {
					changed.Store(true)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-a.clock.After(dnsSaveEvery):
			}
		}
	}()
	return nil
}
