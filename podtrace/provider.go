package podtrace

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Options say where a process's spans go and how many pods are traced.
type Options struct {
	// Service names the process in its spans' resource (skiff-server,
	// skiff-agent).
	Service string
	// SamplingRate is the fraction of new traces recorded: of the pods
	// created through this server. Steps of a pod taken elsewhere follow
	// the decision its trace carries.
	SamplingRate float64
	// Store, if set, receives every span as it ends (the server's own).
	Store *Store
	// Peers, if set, get the spans the Store does (the other servers').
	Peers *Peers
	// Exports are OTLP/HTTP endpoints spans are sent to in batches.
	Exports []Export
}

// Export is an OTLP/HTTP traces endpoint: a collector (--tracing-endpoint)
// or the server's /v1/traces, which an agent reports to with its own
// credentials (Client).
type Export struct {
	URL    string
	Client *http.Client // nil: a plain client
	// Every is how long spans wait to be sent in a batch (0: the SDK's
	// 5 s).
	Every time.Duration
}

// NewProvider returns a tracer provider for o. Shut it down to send what
// is left.
func NewProvider(o Options) (*sdktrace.TracerProvider, error) {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(sdktrace.ParentBased(joinSampler{sdktrace.TraceIDRatioBased(o.SamplingRate)})),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(o.Service))),
	}
	if o.Store != nil {
		opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(Exporter{Store: o.Store, Peers: o.Peers})))
	}
	for _, e := range o.Exports {
		exp, err := e.exporter()
		if err != nil {
			return nil, err
		}
		var batch []sdktrace.BatchSpanProcessorOption
		if e.Every > 0 {
			batch = append(batch, sdktrace.WithBatchTimeout(e.Every))
		}
		opts = append(opts, sdktrace.WithBatcher(exp, batch...))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// joinSampler records every step to join (AttrJoin): whether its pod is
// traced is for the server to say, from the journeys it keeps. Other new
// traces are root's to sample.
type joinSampler struct{ root sdktrace.Sampler }

func (s joinSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	for _, kv := range p.Attributes {
		if kv.Key == AttrJoin && kv.Value.AsBool() {
			return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
		}
	}
	return s.root.ShouldSample(p)
}

func (s joinSampler) Description() string { return "JoinedSteps{" + s.root.Description() + "}" }

func (e Export) exporter() (sdktrace.SpanExporter, error) {
	// The exporter ignores a URL it cannot use, and sends to
	// localhost:4318 instead: check it here.
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL with a host", e.URL)
	}
	client := &http.Client{}
	if e.Client != nil {
		c := *e.Client
		client = &c
	}
	client.Transport = retriedConnections{cmp.Or[http.RoundTripper](client.Transport, http.DefaultTransport)}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(e.URL), otlptracehttp.WithHTTPClient(client)}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter to %s: %w", e.URL, err)
	}
	return exp, nil
}

// retriedConnections makes a failed connection an error the exporter
// retries (with its back-off, for up to a minute): a server that is
// restarting or was lost, while the agent's balancer moves to another.
// The exporter retries only errors that say they are temporary, and drops
// the batch otherwise. A batch sent again that had arrived adds nothing
// (Journey.add).
type retriedConnections struct{ next http.RoundTripper }

func (t retriedConnections) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		return nil, temporary{err}
	}
	return resp, err
}

// temporary is a net.Error that says it is temporary.
type temporary struct{ error }

func (e temporary) Temporary() bool { return true }
func (e temporary) Timeout() bool   { return false }
func (e temporary) Unwrap() error   { return e.error }
