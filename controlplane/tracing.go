package controlplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/podtrace"
)

// Tracing is how a server traces pods' journeys (--tracing-*).
type Tracing struct {
	// SamplingRate is the fraction of the pods created through this
	// server that are traced, 0 to 1.
	SamplingRate float64
	// Pods is how many pods' journeys the server keeps (the newest).
	Pods int
	// Endpoint, if set, is an OTLP/HTTP collector's traces URL the spans
	// also go to (https://collector:4318/v1/traces).
	Endpoint string
}

// DefaultTracedPods is how many pods' journeys a server keeps by default.
const DefaultTracedPods = 1000

// tracing is the server's tracer provider, the store of journeys it and
// the agents' reports feed, and the other servers it forwards them to.
type tracing struct {
	provider *sdktrace.TracerProvider
	journeys *podtrace.Store
	peers    *podtrace.Peers
}

func startTracing(t Tracing, ca *pki.CA) (tracing, error) {
	if t.SamplingRate < 0 || t.SamplingRate > 1 {
		return tracing{}, fmt.Errorf("--tracing-sampling-rate: %v is not between 0 and 1", t.SamplingRate)
	}
	cert, err := issuePair(ca, podtrace.PeerUser, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return tracing{}, fmt.Errorf("journey forwarding client certificate: %w", err)
	}
	peers := podtrace.NewPeers(&http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}})
	journeys := podtrace.NewStore(cmp.Or(t.Pods, DefaultTracedPods))
	podtrace.ObserveSteps(journeys)
	o := podtrace.Options{Service: "skiff-server", SamplingRate: t.SamplingRate, Store: journeys, Peers: peers}
	if t.Endpoint != "" {
		o.Exports = []podtrace.Export{{URL: t.Endpoint}}
	}
	provider, err := podtrace.NewProvider(o)
	if err != nil {
		return tracing{}, fmt.Errorf("--tracing-endpoint: %w", err)
	}
	return tracing{provider: provider, journeys: journeys, peers: peers}, nil
}

// shutdown sends the spans not yet exported, giving it 5 s, and stops
// forwarding.
func (t tracing) shutdown() {
	if t.provider == nil {
		return
	}
	defer t.peers.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		slog.Warn("tracing shutdown", "err", err)
	}
}
