package podtrace

import (
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// ReportPath is where a server takes the agents' spans: OTLP/HTTP's
// path for traces.
const ReportPath = "/v1/traces"

// maxExport is the largest OTLP export a receiver reads (a batch of
// spans from one agent).
const maxExport = 4 << 20

// Receiver takes OpenTelemetry trace exports over OTLP/HTTP (protobuf,
// POST) and adds their pods' spans to Store: how the agents, each in its
// own process, report their steps to the server.
type Receiver struct{ Store *Store }

func (r Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method != http.MethodPost:
		http.Error(w, "OTLP exports are POSTed", http.StatusMethodNotAllowed)
		return
	case req.Header.Get("Content-Type") != "application/x-protobuf":
		http.Error(w, "want Content-Type application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxExport+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxExport {
		http.Error(w, "export too large", http.StatusRequestEntityTooLarge)
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &export); err != nil {
		http.Error(w, "not an OTLP trace export: "+err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range export.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				fromOTLP(sp).addTo(r.Store)
			}
		}
	}
	reply, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(reply)
}

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
