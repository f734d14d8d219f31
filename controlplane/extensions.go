package controlplane

import (
	"context"
	"sync"

	"github.com/skiff-lab/skiff/controlplane/aggregator"
	"github.com/skiff-lab/skiff/controlplane/crds"
	"github.com/skiff-lab/skiff/controlplane/embedded"
)

// servers are the k8s.io/apiserver-based servers embedded behind skiff's
// API server, which hands them every group it does not serve itself: the
// aggregator first (APIServices, and the groups they send to extension
// API servers), then the CRD server.
type servers struct {
	*aggregator.Server
	crds            *crds.Server
	requestHeaderCA []byte // the front proxy's CA
}

// run runs the CRD server and the aggregator until ctx ends; the channel
// closes when both have stopped.
func (s *servers) run(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.crds.Run(ctx) })
	wg.Go(func() { s.Server.Run(ctx) })
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// extensions builds the embedded servers; the front proxy's PKI is kept
// in proxyDir.
func extensions(cfg embedded.Config, proxyDir string) (*servers, error) {
	ext, err := crds.New(cfg)
	if err != nil {
		return nil, err
	}
	ca, client, err := ensureFrontProxyPKI(proxyDir)
	if err != nil {
		return nil, err
	}
	agg, err := aggregator.New(cfg, client, ext)
	if err != nil {
		return nil, err
	}
	return &servers{Server: agg, crds: ext, requestHeaderCA: ca}, nil
}
