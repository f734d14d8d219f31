package apiserver

import (
	"net/http/httptest"
	"testing"
)

func TestProxyPathAndVerb(t *testing.T) {
	s := newTestServer(t)
	for _, tt := range []struct {
		method, path              string
		name, proxyPath, wantVerb string
	}{
		{"GET", "/api/v1/namespaces/ns/pods/https:web:443/proxy", "https:web:443", "", "get"},
		{"HEAD", "/api/v1/namespaces/ns/pods/web/proxy/", "web", "", "get"},
		{"DELETE", "/api/v1/namespaces/ns/services/web:http/proxy/some/path/", "web:http", "/some/path", "delete"},
		{"OPTIONS", "/api/v1/nodes/n1/proxy/logs/", "n1", "/logs", "options"},
		{"PATCH", "/api/v1/namespaces/ns/services/web/proxy/a", "web", "/a", "patch"},
	} {
		req, ok, err := s.parseResourcePath(httptest.NewRequest(tt.method, tt.path, nil))
		if !ok || err != nil {
			t.Fatalf("%s %s: %v %v", tt.method, tt.path, ok, err)
		}
		if req.subresource != "proxy" || req.name != tt.name || req.proxyPath != tt.proxyPath || req.verb != tt.wantVerb {
			t.Errorf("%s %s: name %q proxyPath %q verb %q", tt.method, tt.path, req.name, req.proxyPath, req.verb)
		}
	}
	if _, _, err := s.parseResourcePath(httptest.NewRequest("GET", "/api/v1/namespaces/ns/configmaps/c/proxy/x", nil)); err == nil {
		t.Error("configmaps/proxy served")
	}
}
