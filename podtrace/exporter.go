package podtrace

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter puts the spans of pods' journeys into a store: an
// OpenTelemetry span exporter for the server's own tracer provider.
// Spans without a pod's UID are not a pod's journey and are left out; the
// others also go to Peers, the cluster's other servers.
type Exporter struct {
	Store *Store
	Peers *Peers // nil: no other server
}

var _ sdktrace.SpanExporter = Exporter{}

// ExportSpans adds each pod span to the store as a step.
func (e Exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	taken := make([]Span, 0, len(spans))
	for _, span := range spans {
		s := Span{Name: span.Name(), TraceID: span.SpanContext().TraceID().String(),
			Start: span.StartTime(), End: span.EndTime(), Attrs: span.Attributes()}
		if st := span.Status(); st.Code == codes.Error {
			s.Error = st.Description
		}
		taken = append(taken, s)
	}
	take(e.Store, e.Peers, taken, false)
	return nil
}

// take adds spans to store and, unless a peer forwarded them, sends those
// of pods on to peers.
func take(store *Store, peers *Peers, spans []Span, forwarded bool) {
	var pods []Span
	for _, s := range spans {
		if s.addTo(store, forwarded) && !forwarded {
			pods = append(pods, s)
		}
	}
	peers.Send(pods)
}

// Shutdown does nothing: the store outlives the provider.
func (Exporter) Shutdown(context.Context) error { return nil }

// Span is a finished span as an exporter or the OTLP receiver gets it.
type Span struct {
	Name, TraceID, Error string
	Start, End           time.Time
	Attrs                []attribute.KeyValue
}

// addTo adds the span to store as a step of its pod's journey, if it
// names a pod (a step to join only to a journey the store has); it
// reports whether it names one. A peer's step is the peer's to count.
func (s Span) addTo(store *Store, fromPeer bool) bool {
	ids := map[attribute.Key]string{}
	step := Step{Name: s.Name, Start: s.Start, End: s.End, Error: s.Error, fromPeer: fromPeer}
	join := false
	for _, kv := range s.Attrs {
		switch kv.Key {
		case AttrJoin:
			join = kv.Value.AsBool()
		case AttrPodUID, AttrPodName, AttrNamespace:
			ids[kv.Key] = kv.Value.Emit()
		case AttrComponent:
			step.Component = kv.Value.Emit()
		case AttrNode:
			step.Node = kv.Value.Emit()
		default:
			if step.Attrs == nil {
				step.Attrs = map[string]string{}
			}
			step.Attrs[string(kv.Key)] = kv.Value.Emit()
		}
	}
	switch {
	case ids[AttrPodUID] == "":
		return false
	case join:
		store.Join(ids[AttrPodUID], step)
	default:
		store.Add(ids[AttrPodUID], ids[AttrNamespace], ids[AttrPodName], s.TraceID, step)
	}
	return true
}
