package podtrace

import (
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// fromOTLP is an OTLP span as the store takes it.
func fromOTLP(sp *tracepb.Span) Span {
	s := Span{Name: sp.GetName(), TraceID: hex.EncodeToString(sp.GetTraceId()),
		Start: time.Unix(0, int64(sp.GetStartTimeUnixNano())), End: time.Unix(0, int64(sp.GetEndTimeUnixNano()))}
	if st := sp.GetStatus(); st.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		s.Error = st.GetMessage()
	}
	for _, kv := range sp.GetAttributes() {
		s.Attrs = append(s.Attrs, attributeOf(kv))
	}
	return s
}

// attributeOf converts an OTLP attribute; values other than strings,
// numbers and booleans are kept as text.
func attributeOf(kv *commonpb.KeyValue) attribute.KeyValue {
	key, v := attribute.Key(kv.GetKey()), kv.GetValue()
	switch v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return key.Int64(v.GetIntValue())
	case *commonpb.AnyValue_DoubleValue:
		return key.Float64(v.GetDoubleValue())
	case *commonpb.AnyValue_BoolValue:
		return key.Bool(v.GetBoolValue())
	case *commonpb.AnyValue_StringValue:
		return key.String(v.GetStringValue())
	}
	return key.String(v.String())
}

// forwardedExport is spans as one server forwards them to another: an
// OTLP export whose resource carries AttrForwarded.
func forwardedExport(spans []Span) *collectortrace.ExportTraceServiceRequest {
	out := make([]*tracepb.Span, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.toOTLP())
	}
	resource := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		keyValueOf(semconv.ServiceName("skiff-server")), keyValueOf(attribute.Bool(AttrForwarded, true))}}
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: resource, ScopeSpans: []*tracepb.ScopeSpans{{Spans: out}}}}}
}

// forwarded reports whether an export's resource says a server forwarded
// its spans.
func forwarded(r *resourcepb.Resource) bool {
	for _, kv := range r.GetAttributes() {
		if kv.GetKey() == AttrForwarded {
			return kv.GetValue().GetBoolValue()
		}
	}
	return false
}

// toOTLP is the span in OTLP. Only what the store keeps travels: no span
// ID or parent, which no step uses.
func (s Span) toOTLP() *tracepb.Span {
	id, _ := hex.DecodeString(s.TraceID)
	sp := &tracepb.Span{Name: s.Name, TraceId: id,
		StartTimeUnixNano: uint64(s.Start.UnixNano()), EndTimeUnixNano: uint64(s.End.UnixNano())}
	if s.Error != "" {
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Error}
	}
	for _, kv := range s.Attrs {
		sp.Attributes = append(sp.Attributes, keyValueOf(kv))
	}
	return sp
}

// keyValueOf is attributeOf's inverse; slices travel as text.
func keyValueOf(kv attribute.KeyValue) *commonpb.KeyValue {
	v := &commonpb.AnyValue{}
	switch kv.Value.Type() {
	case attribute.BOOL:
		v.Value = &commonpb.AnyValue_BoolValue{BoolValue: kv.Value.AsBool()}
	case attribute.INT64:
		v.Value = &commonpb.AnyValue_IntValue{IntValue: kv.Value.AsInt64()}
	case attribute.FLOAT64:
		v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: kv.Value.AsFloat64()}
	default:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: kv.Value.Emit()}
	}
	return &commonpb.KeyValue{Key: string(kv.Key), Value: v}
}
