package apiserver

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/component-base/metrics"

	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

// The API server's request metrics carry kube-apiserver's names, with
// fewer labels; registered once per process, whatever the number of
// servers in it.
var (
	requestTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "apiserver_request_total",
		Help: "API requests by verb, resource and HTTP response code.",
	}, []string{"verb", "resource", "subresource", "code"})
	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "API request latency by verb and resource (watches excluded).",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"verb", "resource", "subresource"})
)

// requestInfo is what a request was (for the metrics), when it arrived
// and why it was allowed (for the traces of pods' creation).
type requestInfo struct {
	verb, resource, subresource string
	received                    time.Time
	authorized                  string // why the authorizer allowed it
}

type requestInfoKey struct{}

// setRequestInfo records what a request was, for the metrics.
func setRequestInfo(r *http.Request, req request) {
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		info.verb, info.resource, info.subresource = req.verb, req.res.Plural, req.subresource
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// CloseNotify passes on the connection's: k8s.io/apiserver's handlers (the
// CRD server's) flush watches only through writers that have both.
func (s *statusRecorder) CloseNotify() <-chan bool {
	//nolint:staticcheck // what k8s.io/apiserver's responsewriter checks for
	if cn, ok := s.ResponseWriter.(http.CloseNotifier); ok {
		return cn.CloseNotify()
	}
	return make(chan bool)
}

// Hijack hands the connection over for an upgraded stream (exec, attach,
// port-forward); such requests are counted as 101.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if s.code == 0 {
		s.code = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// instrument counts requests by verb, resource and code and times them.
func instrument(next http.Handler) http.Handler {
	skiffmetrics.Register(requestTotal, requestDuration)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{verb: "nonresource", resource: r.URL.Path, received: start}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
		if info.verb == "nonresource" {
			info.resource = ""
		}
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		requestTotal.WithLabelValues(info.verb, info.resource, info.subresource, strconv.Itoa(code)).Inc()
		if info.verb != "watch" {
			requestDuration.WithLabelValues(info.verb, info.resource, info.subresource).Observe(time.Since(start).Seconds())
		}
	})
}
