package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// A node API's error answer keeps the node's message and maps to the
// Status kubectl shows.
func TestNodeResponseError(t *testing.T) {
	for _, tt := range []struct {
		code   int
		reason func(error) bool
	}{
		{http.StatusBadRequest, apierrors.IsBadRequest},
		{http.StatusNotFound, apierrors.IsNotFound},
		{http.StatusInternalServerError, apierrors.IsInternalError},
		{http.StatusForbidden, apierrors.IsInternalError},
	} {
		resp := &http.Response{StatusCode: tt.code, Body: io.NopCloser(strings.NewReader("what the node said\n"))}
		err := responseError(resp)
		if !tt.reason(err) || !strings.Contains(err.Error(), "what the node said") {
			t.Errorf("%d: %v", tt.code, err)
		}
	}
	if err := responseError(&http.Response{StatusCode: http.StatusOK}); err != nil {
		t.Errorf("200: %v", err)
	}
}

func TestParseLogOptions(t *testing.T) {
	good := url.Values{"container": {"c"}, "follow": {"true"}, "tailLines": {"0"}, "limitBytes": {"10"}, "sinceSeconds": {"5"}, "pretty": {"1"}}
	out, err := ParseLogOptions(good)
	if err != nil {
		t.Fatal(err)
	}
	if out.Get("pretty") != "" || out.Get("tailLines") != "0" || out.Get("follow") != "true" {
		t.Errorf("kept %v", out)
	}
	for _, bad := range []url.Values{
		{"tailLines": {"-1"}},
		{"limitBytes": {"0"}},
		{"sinceSeconds": {"x"}},
		{"sinceTime": {"yesterday"}},
		{"sinceTime": {"2026-11-22T10:00:00Z"}, "sinceSeconds": {"5"}},
	} {
		if _, err := ParseLogOptions(bad); !apierrors.IsInvalid(err) {
			t.Errorf("%v: %v, want Invalid", bad, err)
		}
	}
}

// Plain requests proxied to one node share kept-alive connections instead
// of leaving one idle per request.
func TestNodeProxyReusesConnections(t *testing.T) {
	var conns atomic.Int32
	node := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	node.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	node.StartTLS()
	defer node.Close()
	nodes := NewNodes(node.Client().Transport.(*http.Transport).TLSClientConfig, nil, nil)
	loc, _ := url.Parse(node.URL + "/healthz")
	for range 3 {
		rec := httptest.NewRecorder()
		nodes.Upgrade("n1", loc, false).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/nodes/n1/proxy/healthz", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
			t.Fatalf("proxied answer %d %q", rec.Code, rec.Body.String())
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections to the node for 3 requests, want 1", n)
	}
}

func TestPickEndpoint(t *testing.T) {
	eps := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
		Addresses:         []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}},
		NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.3"}},
		Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "tls", Port: 8443}},
	}}}
	seen := map[string]bool{}
	for range 50 {
		host, ok := PickEndpoint(eps, "http")
		if !ok {
			t.Fatal("no endpoint for http")
		}
		seen[host] = true
	}
	if !seen["10.0.0.1:8080"] || !seen["10.0.0.2:8080"] || len(seen) != 2 {
		t.Errorf("picked %v, want both ready addresses at 8080", seen)
	}
	if host, ok := PickEndpoint(eps, ""); ok {
		t.Errorf("the unnamed port picked %s; the service has none", host)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if name, err := ServicePortName(svc, 80); err != nil || name != "http" {
		t.Errorf("port 80: %q %v", name, err)
	}
	if _, err := ServicePortName(svc, 81); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("port 81: %v, want ServiceUnavailable", err)
	}
}
