package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/jointoken"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestBootstrapTokenUsable(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	secret := func(edit func(*corev1.Secret)) *corev1.Secret {
		s := jointoken.Secret("abcdef", "0123456789abcdef", "", now.Add(time.Hour), nil)
		s.Data = map[string][]byte{}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		if edit != nil {
			edit(s)
		}
		return s
	}
	for _, tt := range []struct {
		name   string
		secret *corev1.Secret
		given  string
		want   string
	}{
		{"usable", secret(nil), "0123456789abcdef", ""},
		{"wrong secret", secret(nil), "0123456789abcdeg", "wrong secret"},
		{"expired", secret(func(s *corev1.Secret) { s.Data["expiration"] = []byte(now.Add(-time.Second).Format(time.RFC3339)) }), "0123456789abcdef", "expired"},
		{"not for authentication", secret(func(s *corev1.Secret) { delete(s.Data, "usage-bootstrap-authentication") }), "0123456789abcdef", "not for authentication"},
		{"an Opaque secret", secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), "0123456789abcdef", "not a bootstrap token secret"},
		{"being deleted", secret(func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} }), "0123456789abcdef", "being deleted"},
	} {
		if got := unusable(tt.secret, tt.given, now); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

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
