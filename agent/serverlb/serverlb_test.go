package serverlb

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeServer accepts on loopback and greets every connection with its
// name; stop closes its listener but leaves the connections it has open
// and silent, as a server that hangs or is cut off does.
type fakeServer struct {
	name string
	ln   net.Listener
	mu   sync.Mutex
	held []net.Conn
}

func startFake(t *testing.T, name string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{name: name, ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.held = append(f.held, c)
			f.mu.Unlock()
			_, _ = c.Write([]byte(name + "\n"))
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.held {
			c.Close()
		}
	})
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

// greet dials the balancer and returns the first line the server sends,
// and the connection.
func greet(t *testing.T, b *Balancer) (string, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("through the balancer: %v", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return line[:len(line)-1], c
}

// The balancer sticks to one server; when that one stops answering it
// closes the connections there and moves to another; a new balancer
// started with the kept list reaches a live server though the one it was
// given is gone.
func TestFailover(t *testing.T) {
	s1, s2 := startFake(t, "s1"), startFake(t, "s2")
	state := filepath.Join(t.TempDir(), "servers.json")
	clk := testingclock.NewFakeClock(time.Now())
	b, err := start(t.Context(), s1.addr(), state, Reachable, clk)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := greet(t, b); got != "s1" {
		t.Fatalf("first connection reached %s", got)
	}
	b.SetServers([]string{s2.addr(), s1.addr()})
	if got := loadServers(state); !slices.Equal(got, b.withFallback([]string{s1.addr(), s2.addr()})) {
		t.Errorf("kept servers %v", got)
	}
	got, long := greet(t, b)
	if got != "s1" {
		t.Fatalf("with more servers a connection moved to %s", got)
	}

	s1.ln.Close() // s1 stops answering; its connection stays open, silent
	nextCheck(t, clk)
	wantClosed(t, long, "the connection to the dead server")
	if got, _ := greet(t, b); got != "s2" {
		t.Errorf("after s1 went, a connection reached %s", got)
	}

	again, err := Start(t.Context(), s1.addr(), state, Reachable)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := greet(t, again); got != "s2" {
		t.Errorf("a new balancer reached %s", got)
	}
}

// The balancer leaves a server that takes connections but fails its
// check (not ready) for one that passes, closing the connections there;
// while no other passes, it keeps the server and its connections.
func TestNotReadyServerIsLeft(t *testing.T) {
	s1, s2 := startFake(t, "s1"), startFake(t, "s2")
	var mu sync.Mutex
	ready := map[string]bool{s1.addr(): true, s2.addr(): false}
	setReady := func(server string, r bool) {
		mu.Lock()
		defer mu.Unlock()
		ready[server] = r
	}
	check := func(ctx context.Context, server string) error {
		mu.Lock()
		defer mu.Unlock()
		if !ready[server] {
			return errors.New("not ready")
		}
		return Reachable(ctx, server)
	}
	clk := testingclock.NewFakeClock(time.Now())
	b, err := start(t.Context(), s1.addr(), filepath.Join(t.TempDir(), "servers.json"), check, clk)
	if err != nil {
		t.Fatal(err)
	}
	b.SetServers([]string{s1.addr(), s2.addr()})
	_, long := greet(t, b)

	setReady(s1.addr(), false)
	nextCheck(t, clk)
	nextCheck(t, clk) // the check before has ended
	_ = long.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := long.Read(make([]byte, 1)); !isTimeout(err) {
		t.Errorf("with no server ready, the connection: %v, want kept open", err)
	}
	if got := b.Servers()[0]; got != s1.addr() {
		t.Errorf("with no server ready, moved to %s", got)
	}

	setReady(s2.addr(), true)
	nextCheck(t, clk)
	wantClosed(t, long, "the connection to the server not ready")
	if got, _ := greet(t, b); got != "s2" {
		t.Errorf("after s1 was not ready, a connection reached %s", got)
	}
}

// wantClosed fails t unless the balancer closes conn within 10 s.
func wantClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("%s: %v, want closed by the balancer", what, err)
	}
}

// nextCheck waits for the health checks to wait on clk, then lets the
// next one run.
func nextCheck(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the health checks do not wait on their clock")
		}
	}
	clk.Step(healthInterval)
}

// Ready passes a server whose /readyz answers ok over TLS verified with
// the given config, and says which checks failed otherwise.
func TestReady(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
		if status.Load() != http.StatusOK {
			fmt.Fprint(w, "[+]ping ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\nreadyz check failed\n")
		}
	}))
	defer srv.Close()
	server := srv.Listener.Addr().String()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	check := Ready(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err := check(t.Context(), server); err != nil {
		t.Errorf("ready server: %v", err)
	}
	status.Store(http.StatusInternalServerError)
	err := check(t.Context(), server)
	if err == nil || !strings.Contains(err.Error(), "etcd failed: reason withheld; etcd-readiness failed: reason withheld") {
		t.Errorf("server not ready: %v", err)
	}
	status.Store(http.StatusOK)
	if err := Ready(&tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"})(t.Context(), server); err == nil {
		t.Error("a server with a certificate of another CA passed")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestAddresses(t *testing.T) {
	yes, no, port := true, false, int32(6443)
	slice := &discoveryv1.EndpointSlice{
		Ports: []discoveryv1.EndpointPort{{Port: &port}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: &no}},
			{Addresses: []string{"fd00::3"}},
		},
	}
	if got := Addresses(slice); !slices.Equal(got, []string{"10.0.0.1:6443", "[fd00::3]:6443"}) {
		t.Errorf("Addresses = %v", got)
	}
}
