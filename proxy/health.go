package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// health answers kube-proxy's health endpoints: /healthz and /livez on
// the proxy's health address, unhealthy (503) until the first sync and
// when the last successful sync is older than twice the sync period; and,
// for each externalTrafficPolicy Local service, its health-check node
// port, 200 while this node has a ready endpoint of it and 503 otherwise,
// so that an outside load balancer sends only to nodes that serve it.
type health struct {
	mu     sync.Mutex
	lastOK time.Time
	maxAge time.Duration
	ports  map[int32]*checkPort // by health-check node port
	listen func(addr string) (net.Listener, error)
	clock  clock.PassiveClock
}

// checkPort is one health-check node port and what it reports.
type checkPort struct {
	namespace, name string
	local           int
	srv             *http.Server
}

func newHealth(maxAge time.Duration, c clock.PassiveClock) *health {
	return &health{maxAge: maxAge, ports: map[int32]*checkPort{}, clock: c,
		listen: func(a string) (net.Listener, error) { return net.Listen("tcp", a) }}
}

func (h *health) synced(at time.Time) {
	h.mu.Lock()
	h.lastOK = at
	h.mu.Unlock()
}

// serveHTTP is /healthz and /livez.
func (h *health) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	last, now := h.lastOK, h.clock.Now()
	h.mu.Unlock()
	code := http.StatusOK
	if last.IsZero() || now.Sub(last) > h.maxAge {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]string{"lastUpdated": last.UTC().Format(time.RFC3339Nano), "currentTime": now.UTC().Format(time.RFC3339Nano)})
}

// serve runs the health endpoints on addr until ctx ends.
func (h *health) serve(ctx context.Context, addr string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", h.serveHTTP)
	mux.HandleFunc("GET /livez", h.serveHTTP)
	return serveUntil(ctx, h.listen, addr, mux)
}

// setPorts makes the health-check node ports those of st: servers for new
// ports, local endpoint counts updated, servers of gone ports closed.
func (h *health) setPorts(st *state) {
	want := map[int32]*checkPort{}
	for n, sp := range st.ports {
		if sp.healthCheckNodePort == 0 {
			continue
		}
		cp := want[sp.healthCheckNodePort]
		if cp == nil {
			cp = &checkPort{namespace: n.service.Namespace, name: n.service.Name}
			want[sp.healthCheckNodePort] = cp
		}
		cp.local += len(usable(local(st.endpoints[n])))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for port, cp := range h.ports {
		if want[port] == nil {
			_ = cp.srv.Close()
			delete(h.ports, port)
		}
	}
	for port, cp := range want {
		if cur := h.ports[port]; cur != nil {
			cur.local = cp.local
			continue
		}
		if err := h.startPort(port, cp); err != nil {
			slog.Warn("proxy: health-check node port not served", "port", port, "service", cp.namespace+"/"+cp.name, "err", err)
			continue
		}
		h.ports[port] = cp
	}
}

func (h *health) startPort(port int32, cp *checkPort) error {
	l, err := h.listen(net.JoinHostPort("", strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	cp.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		n := cp.local
		h.mu.Unlock()
		code := http.StatusOK
		if n == 0 {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"service": map[string]string{"namespace": cp.namespace, "name": cp.name},
			"localEndpoints": n, "serviceProxyHealthy": true})
	})}
	go func() { _ = cp.srv.Serve(l) }()
	return nil
}

// close stops every health-check node port.
func (h *health) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for port, cp := range h.ports {
		_ = cp.srv.Close()
		delete(h.ports, port)
	}
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// serveUntil serves handler on addr until ctx ends.
func serveUntil(ctx context.Context, listen func(string) (net.Listener, error), addr string, handler http.Handler) error {
	l, err := listen(addr)
	if err != nil {
		return fmt.Errorf("proxy health: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
