package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/podtrace"
	"github.com/skiff-lab/skiff/proxy"
)

// reportEvery is how long the steps of pods' journeys wait before they
// are sent to the server, in batches.
const reportEvery = 500 * time.Millisecond

// startTracing makes the tracer of the node's pods' steps: they go to the
// server the agent talks to (OTLP/HTTP at its /v1/traces, with the
// agent's credentials), and to the --tracing-endpoint collector if set.
// Only pods whose annotation carries a sampled trace are traced.
func (a *Agent) startTracing(rc *rest.Config) error {
	report, err := url.JoinPath(rc.Host, podtrace.ReportPath)
	if err != nil {
		return fmt.Errorf("agent tracing: %w", err)
	}
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return fmt.Errorf("agent tracing: %w", err)
	}
	o := podtrace.Options{Service: "skiff-agent", Exports: []podtrace.Export{{URL: report, Client: client, Every: reportEvery}}}
	if a.cfg.TracingEndpoint != "" {
		o.Exports = append(o.Exports, podtrace.Export{URL: a.cfg.TracingEndpoint})
	}
	if a.tracing, err = podtrace.NewProvider(o); err != nil {
		return fmt.Errorf("--tracing-endpoint: %w", err)
	}
	a.pods.starts.tracer = podtrace.NewTracer(a.tracing, "agent", a.cfg.NodeName)
	return nil
}

// stopTracing sends the steps not yet sent, giving it 5 s.
func (a *Agent) stopTracing() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.tracing.Shutdown(ctx); err != nil {
		slog.Warn("tracing shutdown", "err", err)
	}
}

// proxySteps records, for each pod a proxy sync made a ready endpoint of a
// Service, the step proxy.synced of its journey. The proxy knows the pod
// from its EndpointSlice, not its trace context: the step joins the
// journey the server keeps of the pod's UID (podtrace.Tracer.Joined).
func proxySteps(t podtrace.Tracer) func([]proxy.ReadyPod, time.Time, time.Time) {
	return func(pods []proxy.ReadyPod, start, end time.Time) {
		for _, p := range pods {
			ref := podtrace.PodRef{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name}
			t.Joined(ref, "proxy.synced", start, end, attribute.String("service", p.Service))
		}
	}
}
