package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestHTTPRequest(t *testing.T) {
	target := Target{PodIP: "10.244.0.5", Container: &v1.Container{Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}
	for _, tc := range []struct {
		name    string
		action  v1.HTTPGetAction
		url     string
		host    string
		headers map[string]string // "" value: header absent
	}{
		{name: "defaults", action: v1.HTTPGetAction{Port: intstr.FromInt32(80)},
			url: "http://10.244.0.5:80", headers: map[string]string{"User-Agent": "kube-probe/1.37", "Accept": "*/*"}},
		{name: "https, host, path and query", action: v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "127.0.0.1", Path: "/healthz?full=1", Port: intstr.FromInt32(443)},
			url: "https://127.0.0.1:443/healthz?full=1"},
		{name: "named port", action: v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("web")},
			url: "http://10.244.0.5:8080/ready"},
		{name: "probe headers win", action: v1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []v1.HTTPHeader{
			{Name: "user-agent", Value: "mine"}, {Name: "Accept", Value: ""}, {Name: "Host", Value: "example.test"}, {Name: "X-A", Value: "1"}}},
			url: "http://10.244.0.5:80", host: "example.test", headers: map[string]string{"User-Agent": "mine", "Accept": "", "X-A": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := httpRequest(context.Background(), &tc.action, target)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodGet || req.URL.String() != tc.url || req.Host != tc.host {
				t.Fatalf("request = %s %s host %q, want GET %s host %q", req.Method, req.URL, req.Host, tc.url, tc.host)
			}
			for k, v := range tc.headers {
				if _, present := req.Header[k]; req.Header.Get(k) != v || (v == "" && present) {
					t.Errorf("header %s = %q (present %v), want %q", k, req.Header.Get(k), present, v)
				}
			}
		})
	}
}

// serverPort returns the port of an httptest server on 127.0.0.1.
func serverPort(t *testing.T, s *httptest.Server) int {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// closedPort returns a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

// probeServer serves the paths TestHTTPProbe probes; /away redirects to
// other, which is on localhost rather than 127.0.0.1 (another host by name).
func probeServer(t *testing.T, other *httptest.Server) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok ", r.UserAgent()) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, strings.Repeat("a", 3*maxBody)) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", serverPort(t, other)), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	return mux
}

func TestHTTPProbe(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	mux := probeServer(t, other)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tls := httptest.NewTLSServer(mux)
	defer tls.Close()
	port, dead := serverPort(t, srv), closedPort(t)
	for _, tc := range []struct {
		name   string
		action v1.HTTPGetAction
		want   Result
		out    string // prefix of the output
		has    string // substring of the output
		limit  time.Duration
	}{
		{name: "200", action: v1.HTTPGetAction{Path: "/ok"}, want: Success, out: "ok kube-probe/1.37"},
		{name: "500", action: v1.HTTPGetAction{Path: "/fail"}, want: Failure, out: "HTTP probe failed with statuscode: 500"},
		{name: "body cut at 10 KiB", action: v1.HTTPGetAction{Path: "/big"}, want: Success, out: strings.Repeat("a", maxBody)},
		{name: "same-host redirect followed", action: v1.HTTPGetAction{Path: "/moved"}, want: Success, out: "ok "},
		{name: "redirect loop", action: v1.HTTPGetAction{Path: "/loop"}, want: Failure, has: "stopped after 10 redirects"},
		{name: "other-host redirect not followed", action: v1.HTTPGetAction{Path: "/away"}, want: Warning, out: "Probe terminated redirects, Response body: "},
		{name: "timeout", action: v1.HTTPGetAction{Path: "/slow"}, limit: 200 * time.Millisecond, want: Failure, out: fmt.Sprintf(`Get "http://127.0.0.1:%d/slow": `, port), has: "Client.Timeout exceeded"},
		{name: "refused", action: v1.HTTPGetAction{Port: intstr.FromInt32(int32(dead))}, want: Failure,
			out: fmt.Sprintf(`Get "http://127.0.0.1:%d": dial tcp 127.0.0.1:%d: connect: connection refused`, dead, dead)},
		{name: "https without verification", action: v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Path: "/ok", Port: intstr.FromInt32(int32(serverPort(t, tls)))}, want: Success, out: "ok "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.action.Port == (intstr.IntOrString{}) {
				tc.action.Port = intstr.FromInt32(int32(port))
			}
			if tc.limit == 0 {
				tc.limit = 10 * time.Second
			}
			got, out, err := newHTTPProber().probe(context.Background(), &tc.action, Target{PodIP: "127.0.0.1"}, tc.limit)
			if err != nil || got != tc.want || !strings.HasPrefix(out, tc.out) || !strings.Contains(out, tc.has) {
				t.Fatalf("probe = %v, %.200q, %v; want %v, output starting %q containing %q", got, out, err, tc.want, tc.out, tc.has)
			}
			if tc.name == "body cut at 10 KiB" && len(out) != maxBody {
				t.Fatalf("output is %d bytes, want %d", len(out), maxBody)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("a redirect to another host was followed %d times", n)
	}
}

func TestHTTPProbeBadNamedPort(t *testing.T) {
	a := &v1.HTTPGetAction{Port: intstr.FromString("nope")}
	got, _, err := newHTTPProber().probe(context.Background(), a, Target{PodIP: "127.0.0.1", Container: &v1.Container{Name: "c"}}, time.Second)
	if got != Unknown || !errors.Is(err, ErrPortNotFound) {
		t.Fatalf("probe = %v, %v; want Unknown and ErrPortNotFound", got, err)
	}
}
