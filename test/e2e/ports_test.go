package e2e

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/test/labtest"
)

// TestEveryListeningSocketNeedsCredentials finds every socket that `skiff
// server` with its agent (and its containerd) listens on, from /proc, and
// checks each: it refuses a client without credentials (a TLS client
// certificate required, or 401/403), or it is a kind docs/design.md lists
// as open (DNS, health checks) and serves nothing else; a unix socket is
// for root only.
func TestEveryListeningSocketNeedsCredentials(t *testing.T) {
	n := startNodeCluster(t, "--etcd-client-port", fmt.Sprint(servertest.FreePorts(t, 1)[0]))
	open := documentedOpen(t)
	sockets := settledSockets(t, n.cmd.Process.Pid)
	kinds := map[string]int{}
	for _, s := range sockets {
		kind, err := audit(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		t.Logf("%s: %s", s, kind)
		kinds[kind]++
		if kind == "DNS" || kind == "health" || kind == "one-use token" {
			if !open[kind] {
				t.Errorf("%s is open (%s) but docs/design.md does not list it as open", s, kind)
			}
		}
	}
	// The run saw the sockets it must have seen: the API server, the
	// node API and etcd's peer and client listeners want certificates or
	// credentials; the cluster DNS and the proxy's health are open.
	if kinds["TLS client certificate"] < 3 || kinds["401/403"] < 1 || kinds["DNS"] < 2 || kinds["health"] < 1 {
		t.Errorf("sockets by kind %v: fewer than the server and its agent open", kinds)
	}
}

// settledSockets waits until pid's node has opened what it opens after
// registering (the cluster DNS among them: a UDP socket) and its sockets
// have stayed the same for three seconds, and returns them.
func settledSockets(t *testing.T, pid int) []socket {
	t.Helper()
	var last []socket
	stable := 0
	waitUntilEvery(t, "the node's sockets to settle", time.Second, func() bool {
		now := listeningSockets(t, pid)
		if slices.Equal(now, last) {
			stable++
		} else {
			stable = 0
		}
		last = now
		udp := slices.ContainsFunc(now, func(s socket) bool { return strings.HasPrefix(s.proto, "udp") })
		return udp && stable >= 3
	})
	return last
}

// documentedOpen are the kinds of socket docs/design.md's port table
// lists as open to everyone: rows whose authentication reads "none: DNS",
// "none: health" or "none: one-use token".
func documentedOpen(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(labtest.RepoRoot(), "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		for _, kind := range []string{"DNS", "health", "one-use token"} {
			if strings.HasPrefix(line, "| ") && strings.Contains(line, "| none: "+kind) {
				out[kind] = true
			}
		}
	}
	return out
}

// audit says what a socket asks of its clients, or why it is open to
// anyone when it should not be.
func audit(s socket) (string, error) {
	if s.proto == "unix" {
		return auditUnix(s.path)
	}
	addr := s.addr
	if addr.Addr().IsUnspecified() {
		addr = netip.AddrPortFrom(netip.MustParseAddr(map[bool]string{true: "127.0.0.1", false: "::1"}[addr.Addr().Is4()]), addr.Port())
	}
	if strings.HasPrefix(s.proto, "udp") {
		if askDNS("udp", addr.String()) {
			return "DNS", nil
		}
		return "", errors.New("a UDP socket that does not answer DNS")
	}
	if askDNS("tcp", addr.String()) {
		return "DNS", nil
	}
	if kind, ok, err := auditTLS(addr.String()); ok {
		return kind, err
	}
	kind, err := auditHealth(addr.String())
	if err != nil && addr.Addr().IsLoopback() && servesOnlyTokenURLs(addr.String()) {
		return "one-use token", nil
	}
	return kind, err
}

// servesOnlyTokenURLs says a plain-HTTP socket answers 404 to everything a
// client without a token it was handed may ask, as the CRI streaming
// server (exec, attach, port-forward at URLs with a one-use token).
func servesOnlyTokenURLs(addr string) bool {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/", "/healthz", "/metrics", "/exec/guessed", "/attach/guessed", "/portforward/guessed"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(method, "http://"+addr+path, nil)
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				return false
			}
		}
	}
	return true
}

// askDNS asks the socket for the cluster's kubernetes Service.
func askDNS(network, addr string) bool {
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	m := new(dns.Msg).SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	r, _, err := c.Exchange(m, addr)
	return err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0
}

// auditTLS asks over TLS, without a client certificate, for the cluster's
// Secrets. ok is false when addr does not speak TLS.
func auditTLS(addr string) (kind string, ok bool, err error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // no credentials of any kind
	}}
	resp, err := client.Get("https://" + addr + "/api/v1/namespaces/kube-system/secrets")
	switch {
	case err != nil && strings.Contains(err.Error(), "remote error: tls:"):
		return "TLS client certificate", true, nil
	case err != nil:
		return "", false, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return "401/403", true, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return "", true, fmt.Errorf("TLS without credentials answers %d: %s", resp.StatusCode, body)
}

// auditHealth checks a plain-HTTP socket: health only, 404 for the rest.
func auditHealth(addr string) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, error) {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get("/healthz"); err != nil || code != http.StatusOK {
		return "", fmt.Errorf("neither TLS, DNS nor a health check (GET /healthz: %d, %v)", code, err)
	}
	for _, path := range []string{"/", "/metrics", "/api/v1/secrets", "/v3/kv/range", "/configz"} {
		if code, err := get(path); err != nil || code != http.StatusNotFound {
			return "", fmt.Errorf("a health check that also serves %s (%d, %v)", path, code, err)
		}
	}
	return "health", nil
}

// auditUnix checks that only root reaches a unix socket: the socket or a
// directory on its path is closed to others. Abstract sockets have no
// file modes and must not exist.
func auditUnix(path string) (string, error) {
	if path == "" || strings.HasPrefix(path, "@") {
		return "", fmt.Errorf("an abstract or unnamed unix socket %q: anyone in the network namespace may connect", path)
	}
	for p := path; p != "/"; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		st := info.Sys().(*syscall.Stat_t)
		need := uint32(0o002) // others may write the socket
		if p != path {
			need = 0o001 // others may search the directory
		}
		if st.Mode&need == 0 && (st.Gid == 0 || st.Mode&(need<<3) == 0) {
			return "root only", nil
		}
	}
	return "", fmt.Errorf("others may connect to %s", path)
}
