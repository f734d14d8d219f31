package podtrace

import (
	"io"
	"net/http"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
// own process, report their steps to the server. It sends them on to
// Peers, the other servers, unless a server forwarded them (AttrForwarded).
type Receiver struct {
	Store *Store
	Peers *Peers // nil: no other server
}

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
		var spans []Span
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				spans = append(spans, fromOTLP(sp))
			}
		}
		take(r.Store, r.Peers, spans, forwarded(rs.GetResource()))
	}
	reply, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(reply)
}
