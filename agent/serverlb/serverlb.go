// Package serverlb is an agent's client-side load balancer of API
// servers, as k3s's agent load balancer: the agent's clients dial a local
// port, whose connections go on to one server of the cluster, the same one
// while it answers; when it stops answering, the balancer moves to another
// and closes the connections it had there, so that the clients (their
// watches, the node's lease) reconnect through it at once. A server
// answers when its Check passes: the agent's checks its /readyz (Ready),
// so a server that accepts connections but has lost etcd, or has not
// finished starting, is left too. The servers are the one the agent was
// given and those the kubernetes EndpointSlice lists (Watch), kept in a
// file for the next start.
package serverlb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/continuity"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

const (
	dialTimeout    = 3 * time.Second
	checkTimeout   = 5 * time.Second
	healthInterval = 5 * time.Second
)

// Check says whether a server (host:port) can take the agent's
// requests: nil, or why not.
type Check func(ctx context.Context, server string) error

// Reachable is the Check that a server accepts TCP connections.
func Reachable(ctx context.Context, server string) error {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", server)
	if err == nil {
		conn.Close()
	}
	return err
}

// Ready is the Check that a server's /readyz answers ok over TLS verified
// with tlsConfig (which names what the agent's clients verify). /readyz
// is open to anonymous users, as in kube-apiserver.
func Ready(tlsConfig *tls.Config) Check {
	client := &http.Client{Timeout: checkTimeout, Transport: &http.Transport{
		TLSClientConfig: tlsConfig, DisableKeepAlives: true,
		DialContext: (&net.Dialer{Timeout: dialTimeout}).DialContext,
	}}
	return func(ctx context.Context, server string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+server+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s: %s", resp.Status, failedChecks(string(body)))
		}
		return nil
	}
}

// failedChecks are the checks a /readyz body says failed ("[-]etcd
// failed: ..." lines), or the body's first line.
func failedChecks(body string) string {
	var failed []string
	for line := range strings.Lines(body) {
		if name, ok := strings.CutPrefix(line, "[-]"); ok {
			failed = append(failed, strings.TrimSpace(name))
		}
	}
	if len(failed) == 0 {
		first, _, _ := strings.Cut(body, "\n")
		return first
	}
	return strings.Join(failed, "; ")
}

// Balancer forwards the connections of a local listener to a server.
type Balancer struct {
	ln    net.Listener
	state string // the file the servers are kept in
	// fallback is the server the agent was given: always a candidate.
	fallback string

	clock clock.Clock // paces the health checks
	check Check

	mu      sync.Mutex
	servers []string // host:port, fallback included
	current string
	conns   map[string]map[io.Closer]struct{} // by server
}

// Start listens on a loopback port and forwards to server (host:port) or
// the servers kept in state from an earlier run, until ctx ends; it moves
// to another server when the current one fails check.
func Start(ctx context.Context, server, state string, check Check) (*Balancer, error) {
	return start(ctx, server, state, check, clock.RealClock{})
}

// start is Start with the health checks paced by clk (a fake in tests).
func start(ctx context.Context, server, state string, check Check, clk clock.Clock) (*Balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Balancer{ln: ln, state: state, fallback: server, clock: clk, check: check, conns: map[string]map[io.Closer]struct{}{}}
	b.servers = b.withFallback(loadServers(state))
	b.current = b.servers[0]
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go b.accept()
	go b.checkHealth(ctx)
	return b, nil
}

// Addr is the local address the agent's clients dial.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// Servers are the servers it knows, the current one first.
func (b *Balancer) Servers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []string{b.current}
	for _, s := range b.servers {
		if s != b.current {
			out = append(out, s)
		}
	}
	return out
}

// SetServers replaces the servers (the fallback stays one), keeping them
// for the next start. A current server no longer listed is left.
func (b *Balancer) SetServers(servers []string) {
	servers = b.withFallback(servers)
	b.mu.Lock()
	if slices.Equal(servers, b.servers) {
		b.mu.Unlock()
		return
	}
	b.servers = servers
	gone := !slices.Contains(servers, b.current)
	b.mu.Unlock()
	slog.Info("API servers", "servers", servers)
	if err := saveServers(b.state, servers); err != nil {
		slog.Warn("API servers not kept", "file", b.state, "err", err)
	}
	if gone {
		b.failOver(context.Background())
	}
}

func (b *Balancer) withFallback(servers []string) []string {
	out := slices.Clone(servers)
	if !slices.Contains(out, b.fallback) {
		out = append(out, b.fallback)
	}
	slices.Sort(out)
	return out
}

func (b *Balancer) accept() {
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.forward(conn)
	}
}

// forward joins a client's connection to one of the servers: the
// current, or the first other that answers (which becomes current).
func (b *Balancer) forward(client net.Conn) {
	server, upstream := b.dial()
	if upstream == nil {
		client.Close() // the client retries with its back-off
		return
	}
	b.track(server, client, upstream)
	defer b.untrack(server, client, upstream)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	<-done
	client.Close()
	upstream.Close()
}

// dial connects to the current server, else to the others in turn.
func (b *Balancer) dial() (string, net.Conn) {
	for _, s := range b.Servers() {
		conn, err := net.DialTimeout("tcp", s, dialTimeout)
		if err == nil {
			b.use(s)
			return s, conn
		}
	}
	return "", nil
}

// use makes s the current server.
func (b *Balancer) use(s string) {
	b.mu.Lock()
	was := b.current
	b.current = s
	b.mu.Unlock()
	if was != s {
		slog.Info("API server switched", "from", was, "to", s)
	}
}

func (b *Balancer) track(server string, conns ...io.Closer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns[server] == nil {
		b.conns[server] = map[io.Closer]struct{}{}
	}
	for _, c := range conns {
		b.conns[server][c] = struct{}{}
	}
}

func (b *Balancer) untrack(server string, conns ...io.Closer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.conns[server], c)
	}
}

// checkHealth checks the current server every healthInterval and fails
// over when it does not pass; it says so when the server stops passing
// and when it passes again, not at every check.
func (b *Balancer) checkHealth(ctx context.Context) {
	down := false
	for {
		select {
		case <-ctx.Done():
			b.closeAll()
			return
		case <-b.clock.After(healthInterval):
		}
		b.mu.Lock()
		current := b.current
		b.mu.Unlock()
		err := b.check(ctx, current)
		if err == nil {
			if down {
				slog.Info("API server answering", "server", current)
			}
			down = false
			continue
		}
		if !down {
			slog.Warn("API server not answering: trying the others", "server", current, "err", err)
		}
		down = true
		b.failOver(ctx)
	}
}

// failOver moves to another server that passes the check and closes the
// connections the clients had to the one before, so that they reconnect.
// With no other to move to, it closes them only if the server does not
// take connections at all: one that is not ready keeps its clients.
func (b *Balancer) failOver(ctx context.Context) {
	b.mu.Lock()
	old := b.current
	b.mu.Unlock()
	moved := false
	for _, s := range b.Servers()[1:] {
		if b.check(ctx, s) == nil {
			b.use(s)
			moved = true
			break
		}
	}
	if moved || Reachable(ctx, old) != nil {
		b.closeConns(old)
	}
}

func (b *Balancer) closeConns(server string) {
	b.mu.Lock()
	conns := b.conns[server]
	delete(b.conns, server)
	b.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

func (b *Balancer) closeAll() {
	for _, s := range b.Servers() {
		b.closeConns(s)
	}
}

// loadServers reads the servers kept in path; none when there is no file.
func loadServers(path string) []string {
	var servers []string
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &servers)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		slog.Warn("API servers kept from before not read", "file", path, "err", err)
	}
	return servers
}

func saveServers(path string, servers []string) error {
	data, err := json.Marshal(servers)
	if err != nil {
		return err
	}
	return continuity.AtomicWriteFile(path, data, 0o600)
}

// Watch keeps b's servers those of the kubernetes EndpointSlice, as the
// API servers keep it (every live server's address), until ctx ends.
func Watch(ctx context.Context, client kubernetes.Interface, b *Balancer) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "kubernetes").String()
		}))
	update := func(obj any) {
		if slice, ok := obj.(*discoveryv1.EndpointSlice); ok {
			if servers := Addresses(slice); len(servers) > 0 {
				b.SetServers(servers)
			}
		}
	}
	_, err := factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: update, UpdateFunc: func(_, cur any) { update(cur) }})
	if err != nil {
		slog.Error("API servers not watched", "err", err)
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// Addresses are the host:port of the ready endpoints of an API servers'
// EndpointSlice.
func Addresses(slice *discoveryv1.EndpointSlice) []string {
	if len(slice.Ports) == 0 || slice.Ports[0].Port == nil {
		return nil
	}
	port := strconv.Itoa(int(*slice.Ports[0].Port))
	var out []string
	for _, e := range slice.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		for _, a := range e.Addresses {
			out = append(out, net.JoinHostPort(a, port))
		}
	}
	return out
}
