package controlplane

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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

// tracing is the server's tracer provider and the store of journeys it
// and the agents' reports feed.
type tracing struct {
	provider *sdktrace.TracerProvider
	journeys *podtrace.Store
}

func startTracing(t Tracing) (tracing, error) {
	if t.SamplingRate < 0 || t.SamplingRate > 1 {
		return tracing{}, fmt.Errorf("--tracing-sampling-rate: %v is not between 0 and 1", t.SamplingRate)
	}
	journeys := podtrace.NewStore(cmp.Or(t.Pods, DefaultTracedPods))
	podtrace.ObserveSteps(journeys)
	o := podtrace.Options{Service: "skiff-server", SamplingRate: t.SamplingRate, Store: journeys}
	if t.Endpoint != "" {
		o.Exports = []podtrace.Export{{URL: t.Endpoint}}
	}
	provider, err := podtrace.NewProvider(o)
	if err != nil {
		return tracing{}, fmt.Errorf("--tracing-endpoint: %w", err)
	}
	return tracing{provider: provider, journeys: journeys}, nil
}

// shutdown sends the spans not yet exported, giving it 5 s.
func (t tracing) shutdown() {
	if t.provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		slog.Warn("tracing shutdown", "err", err)
	}
}
