// Package nodeapi is the agent's node API, the kubelet's port 10250: the
// API server proxies kubectl logs, exec, attach and port-forward here, and
// reads the node's stats from it. It serves HTTPS and takes only the
// client certificates it is told to (the API server's).
package nodeapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Host is the node the API serves (implemented by the agent). Pods are
// named "<namespace>/<name>" where the streaming interfaces take a name;
// uid, when the request gives one, must match the pod's.
type Host interface {
	// ContainerLogs writes a container's log to w as opts select.
	ContainerLogs(ctx context.Context, namespace, pod, container string, opts *v1.PodLogOptions, w io.Writer) error
	// StatsSummary is the node's, pods' and containers' CPU and memory.
	StatsSummary(ctx context.Context) (*statsapi.Summary, error)
	remotecommand.Executor
	remotecommand.Attacher
	portforward.PortForwarder
}

// StatusError is a Host error that answers with its HTTP status code.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// NotFound is the error for a pod or container the node does not have.
func NotFound(format string, args ...any) error {
	return &StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// BadRequest is the error for a request the container's state cannot
// serve, e.g. logs of a container that has not started.
func BadRequest(format string, args ...any) error {
	return &StatusError{Code: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// Stream timeouts, as the kubelet's defaults.
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// Config is how the node API is served.
type Config struct {
	Addr string // host:port to listen on
	// TLS has the serving certificate and the CA that client certificates
	// must chain to; ClientAuth is set to require and verify them.
	TLS *tls.Config
	// Clients are the common names of the client certificates accepted;
	// others get 403.
	Clients []string
	// Metrics serves /metrics.
	Metrics http.Handler
	// Services, if set, answers GET /skiff/services/{namespace}/{name}:
	// the node's view of a Service (skiff explain service).
	Services http.Handler
}

// Serve serves the node API until ctx ends.
func Serve(ctx context.Context, cfg Config, host Host) error {
	tlsCfg := cfg.TLS.Clone()
	tlsCfg.ClientAuth = tls.RequireAndVerifyClientCert
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("node API: %w", err)
	}
	srv := &http.Server{
		Handler:           authorize(cfg.Clients, Handler(host, cfg.Metrics, cfg.Services)),
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug),
	}
	go func() {
		<-ctx.Done()
		srv.Close() // streams end with their connections
	}()
	slog.Info("node API serving", "address", ln.Addr().String())
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("node API: %w", err)
	}
	return nil
}

// authorize lets through requests whose verified client certificate has
// one of the allowed common names.
func authorize(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cert *x509.Certificate
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			cert = r.TLS.PeerCertificates[0]
		}
		if cert == nil || !slices.Contains(allowed, cert.Subject.CommonName) {
			user := "anonymous"
			if cert != nil {
				user = cert.Subject.CommonName
			}
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, path=%s)", user, r.Method, r.URL.Path), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler routes the node API's paths, as the kubelet names them.
func Handler(host Host, metrics, services http.Handler) http.Handler {
	h := handler{host: host}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	if services != nil {
		mux.Handle("GET "+ServicesPath+"/{namespace}/{name}", services)
	}
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", h.logs)
	mux.HandleFunc("GET /stats/summary", h.summary)
	for _, prefix := range []string{"/exec/{namespace}/{pod}", "/exec/{namespace}/{pod}/{uid}"} {
		mux.HandleFunc(prefix+"/{container}", h.exec)
	}
	for _, prefix := range []string{"/attach/{namespace}/{pod}", "/attach/{namespace}/{pod}/{uid}"} {
		mux.HandleFunc(prefix+"/{container}", h.attach)
	}
	mux.HandleFunc("/portForward/{namespace}/{pod}", h.portForward)
	mux.HandleFunc("/portForward/{namespace}/{pod}/{uid}", h.portForward)
	return mux
}

// ServicesPath prefixes a Service's view on a node: GET
// ServicesPath/{namespace}/{name}.
const ServicesPath = "/skiff/services"

type handler struct{ host Host }

func podName(r *http.Request) string { return r.PathValue("namespace") + "/" + r.PathValue("pod") }

func (h handler) logs(w http.ResponseWriter, r *http.Request) {
	opts, err := logOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := &logStream{w: w, buf: bufio.NewWriterSize(w, 32<<10)}
	err = h.host.ContainerLogs(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), opts, out)
	if err != nil && !out.started {
		writeError(w, err)
		return
	}
	if err != nil {
		slog.Debug("container logs", "pod", podName(r), "err", err)
	}
	out.Flush()
}

func (h handler) summary(w http.ResponseWriter, r *http.Request) {
	summary, err := h.host.StatsSummary(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(summary); err != nil {
		slog.Debug("stats summary", "err", err)
	}
}

func (h handler) exec(w http.ResponseWriter, r *http.Request) {
	opts, cmd, err := execOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	remotecommand.ServeExec(w, r, h.host, podName(r), r.PathValue("uid"), r.PathValue("container"), cmd,
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (h handler) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	remotecommand.ServeAttach(w, r, h.host, podName(r), r.PathValue("uid"), r.PathValue("container"),
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (h handler) portForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, h.host, podName(r), r.PathValue("uid"), opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// execOptions reads the query of an exec request: the streams (stdin,
// stdout, stderr, tty, as attach reads them) and the command, one
// "command" parameter per argument.
func execOptions(r *http.Request) (*remotecommand.Options, []string, error) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		return nil, nil, err
	}
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		return nil, nil, errors.New("no command given (the query parameter \"command\")")
	}
	return opts, cmd, nil
}

// logOptions reads the query of a containerLogs request, as the kubelet
// does (the API server sends PodLogOptions' fields as query parameters).
func logOptions(r *http.Request) (*v1.PodLogOptions, error) {
	q := r.URL.Query()
	opts := &v1.PodLogOptions{
		Follow:     boolParam(q.Get("follow")),
		Previous:   boolParam(q.Get("previous")),
		Timestamps: boolParam(q.Get("timestamps")),
	}
	for name, dst := range map[string]**int64{"tailLines": &opts.TailLines, "sinceSeconds": &opts.SinceSeconds, "limitBytes": &opts.LimitBytes} {
		s := q.Get(name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || (n == 0 && name != "tailLines") {
			return nil, fmt.Errorf("%s: %q is not a valid count", name, s)
		}
		*dst = &n
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, fmt.Errorf("sinceTime: %q is not an RFC 3339 time", s)
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if opts.SinceSeconds != nil && opts.SinceTime != nil {
		return nil, errors.New("at most one of sinceTime or sinceSeconds may be specified")
	}
	return opts, nil
}

func boolParam(s string) bool {
	b, _ := strconv.ParseBool(s)
	return b
}

// writeError answers with the status a Host's StatusError asks for, else
// 500.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if se, ok := errors.AsType[*StatusError](err); ok {
		code = se.Code
	}
	http.Error(w, err.Error(), code)
}

// logStream is a log response: buffered, and sent on Flush (which
// cri.ReadLog calls whenever it waits for more of a followed log).
type logStream struct {
	w       http.ResponseWriter
	buf     *bufio.Writer
	started bool
}

func (s *logStream) Write(p []byte) (int, error) {
	if !s.started {
		s.w.Header().Set("Content-Type", "text/plain")
		s.started = true
	}
	return s.buf.Write(p)
}

func (s *logStream) Flush() error {
	if !s.started {
		s.w.Header().Set("Content-Type", "text/plain")
		s.started = true
	}
	if err := s.buf.Flush(); err != nil {
		return err
	}
	return http.NewResponseController(s.w).Flush()
}
