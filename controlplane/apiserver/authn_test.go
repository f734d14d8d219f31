package apiserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
)

func writeTokenFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverWith is a test server whose authentication is built from cfg's
// Tokens and TokenAuthFile.
func serverWith(t *testing.T, tokens map[string]authn.User, tokenFile string) *Server {
	t.Helper()
	s, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts, Tokens: tokens, TokenAuthFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// seenUser is who a handler behind authenticate saw; nil for nobody.
type seenUser struct {
	Name, UID string
	Groups    []string
}

func authenticateAs(s *Server, path, auth string) (int, *seenUser) {
	var seen *seenUser
	h := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := UserFrom(r.Context()); ok {
			seen = &seenUser{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
		}
	}))
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, seen
}

func TestAuthenticateBearerToken(t *testing.T) {
	s := serverWith(t, map[string]authn.User{"secret": {Name: "alice", UID: "u1", Groups: []string{"dev"}}},
		writeTokenFile(t, "\nfiletok,bob,u2,\"ops,system:masters\"\n"))
	tests := []struct {
		name, path, auth string
		code             int
		user             *seenUser
	}{
		{"known token", "/api/v1/pods", "Bearer secret", http.StatusOK, &seenUser{"alice", "u1", []string{"dev", "system:authenticated"}}},
		{"token from the file", "/api/v1/pods", "Bearer filetok", http.StatusOK,
			&seenUser{"bob", "u2", []string{"ops", "system:masters", "system:authenticated"}}},
		{"unknown token", "/api/v1/pods", "Bearer guess", http.StatusUnauthorized, nil},
		{"basic auth", "/api/v1/pods", "Basic c2VjcmV0", http.StatusUnauthorized, nil},
		{"no credentials", "/api/v1/pods", "", http.StatusUnauthorized, nil},
		{"anonymous health check", "/healthz", "", http.StatusOK, nil},
		{"anonymous version", "/version", "", http.StatusOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, seen := authenticateAs(s, tt.path, tt.auth)
			if code != tt.code || !reflect.DeepEqual(seen, tt.user) {
				t.Errorf("code %d user %+v, want %d %+v", code, seen, tt.code, tt.user)
			}
		})
	}
}

func TestTokenAuthFileErrors(t *testing.T) {
	for name, content := range map[string]string{
		"too few fields": "tok1,alice,uid-1\ntok2,bob\n",
		"bad quoting":    "tok1,alice,uid-1,\"ops\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts, TokenAuthFile: writeTokenFile(t, content)})
			if err == nil || !strings.Contains(err.Error(), "--token-auth-file") {
				t.Errorf("err = %v, want one naming --token-auth-file", err)
			}
		})
	}
	_, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts, TokenAuthFile: filepath.Join(t.TempDir(), "absent.csv")})
	if err == nil {
		t.Error("no error for a missing token file")
	}
}

// The user a request sees is its own: a handler that changes its groups
// changes nothing for the next request (concurrent requests share the
// token table).
func TestAuthenticateDoesNotShareGroups(t *testing.T) {
	s := serverWith(t, nil, writeTokenFile(t, "tok,alice,u1,\"a,b,c\"\n"))
	h := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := UserFrom(r.Context())
		u.GetGroups()[0] = "changed-by-a-handler"
	}))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Authorization", "Bearer tok")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if _, seen := authenticateAs(s, "/api/v1/pods", "Bearer tok"); !reflect.DeepEqual(seen.Groups, []string{"a", "b", "c", "system:authenticated"}) {
		t.Errorf("groups = %v on the next request, want [a b c system:authenticated]", seen.Groups)
	}
}

// TestAnonymousAuth: a request without credentials is system:anonymous
// for an authorizing server, 401 with --anonymous-auth=false, and (no
// authorizer) allowed on the health and version paths only; the cluster
// CA is public in every case.
func TestAnonymousAuth(t *testing.T) {
	anon := &seenUser{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	for _, tt := range []struct {
		name                   string
		authorize, noAnonymous bool
		path                   string
		code                   int
		user                   *seenUser
	}{
		{"authorizing", true, false, "/api/v1/pods", http.StatusOK, anon},
		{"authorizing, health", true, false, "/healthz", http.StatusOK, anon},
		{"authorizing, no anonymous", true, true, "/healthz", http.StatusUnauthorized, nil},
		{"authorizing, no anonymous, CA", true, true, "/cacerts", http.StatusOK, nil},
		{"always allow", false, false, "/api/v1/pods", http.StatusUnauthorized, nil},
		{"always allow, version", false, false, "/version", http.StatusOK, nil},
		{"always allow, no anonymous", false, true, "/version", http.StatusUnauthorized, nil},
		{"always allow, CA", false, true, "/cacerts", http.StatusOK, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts,
				Authorize: tt.authorize, NoAnonymous: tt.noAnonymous})
			if err != nil {
				t.Fatal(err)
			}
			code, seen := authenticateAs(s, tt.path, "")
			if code != tt.code || !reflect.DeepEqual(seen, tt.user) {
				t.Errorf("code %d user %+v, want %d %+v", code, seen, tt.code, tt.user)
			}
		})
	}
}
