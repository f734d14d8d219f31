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
// Spans without a pod's UID are not a pod's journey and are left out.
type Exporter struct{ Store *Store }

var _ sdktrace.SpanExporter = Exporter{}

// ExportSpans adds each pod span to the store as a step.
func (e Exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	for _, span := range spans {
		s := Span{Name: span.Name(), TraceID: span.SpanContext().TraceID().String(),
			Start: span.StartTime(), End: span.EndTime(), Attrs: span.Attributes()}
		if st := span.Status(); st.Code == codes.Error {
			s.Error = st.Description
		}
		s.addTo(e.Store)
	}
	return nil
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
// names a pod (a step to join only to a journey the store has).
func (s Span) addTo(store *Store) {
	ids := map[attribute.Key]string{}
	step := Step{Name: s.Name, Start: s.Start, End: s.End, Error: s.Error}
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
		return
	case join:
		store.Join(ids[AttrPodUID], step)
		return
	}
	store.Add(ids[AttrPodUID], ids[AttrNamespace], ids[AttrPodName], s.TraceID, step)
}
