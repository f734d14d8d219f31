package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestBootstrappersMayOnlyJoin checks that a bootstrap token's user may
// discover the API and nothing else that exists today (its certificate
// requests come with the CSR API).
func TestBootstrappersMayOnlyJoin(t *testing.T) {
	s := newTestServer(t)
	boot := &user.DefaultInfo{Name: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", "system:authenticated"}}
	for _, tt := range []struct {
		method, path string
		forbidden    bool
	}{
		{"GET", "/version", false},
		{"GET", "/api", false},
		{"GET", "/apis/apps/v1", false},
		{"GET", "/api/v1/pods", true},
		{"GET", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef", true},
		{"POST", "/api/v1/namespaces/default/pods", true},
		{"GET", "/metrics", true},
		{"GET", "/debug/pprof/heap", true},
	} {
		r := httptest.NewRequest(tt.method, tt.path, nil)
		r = r.WithContext(genericrequest.WithUser(r.Context(), boot))
		w := httptest.NewRecorder()
		if refused := s.refuseBootstrapper(w, r); refused != tt.forbidden {
			t.Errorf("%s %s: refused %v, want %v", tt.method, tt.path, refused, tt.forbidden)
		} else if refused && (w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `User \"system:bootstrap:abcdef\" cannot`)) {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, w.Code, w.Body)
		}
	}
	admin := httptest.NewRequest("GET", "/api/v1/pods", nil)
	admin = admin.WithContext(genericrequest.WithUser(admin.Context(), &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}))
	if s.refuseBootstrapper(httptest.NewRecorder(), admin) {
		t.Error("an admin was refused")
	}
}
