package apiserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func writeTokenFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadTokenFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    map[string]User
		wantErr bool
	}{
		{"user without groups", "tok1,alice,uid-1\n", map[string]User{"tok1": {Name: "alice", UID: "uid-1"}}, false},
		{"quoted groups", `tok1,alice,uid-1,"system:masters, dev"` + "\n",
			map[string]User{"tok1": {Name: "alice", UID: "uid-1", Groups: []string{"system:masters", "dev"}}}, false},
		{"comments, blank lines and spaces", "# admin tokens\n\ntok1, alice, uid-1\ntok2,bob,uid-2,ops\n",
			map[string]User{"tok1": {Name: "alice", UID: "uid-1"}, "tok2": {Name: "bob", UID: "uid-2", Groups: []string{"ops"}}}, false},
		{"empty group field", "tok1,alice,uid-1,\n", map[string]User{"tok1": {Name: "alice", UID: "uid-1"}}, false},
		{"empty file", "", map[string]User{}, false},
		{"too few fields", "tok1,alice,uid-1\ntok2,bob\n", nil, true},
		{"empty token", ",alice,uid-1\n", nil, true},
		{"empty user", "tok1,,uid-1\n", nil, true},
		{"bad quoting", "tok1,alice,uid-1,\"ops\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadTokenFile(writeTokenFile(t, tt.content))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tokens = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadTokenFileMissing(t *testing.T) {
	if _, err := LoadTokenFile(filepath.Join(t.TempDir(), "absent.csv")); !os.IsNotExist(err) {
		t.Errorf("err = %v, want not exist", err)
	}
}

func TestAuthenticateBearerToken(t *testing.T) {
	s := newTestServer(t)
	s.cfg.Tokens = map[string]User{"secret": {Name: "alice", UID: "u1", Groups: []string{"dev"}}}
	var seen *User
	h := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := UserFrom(r.Context()); ok {
			seen = &u
		}
	}))
	tests := []struct {
		name, path, auth string
		code             int
		user             *User
	}{
		{"known token", "/api/v1/pods", "Bearer secret", http.StatusOK, &User{Name: "alice", UID: "u1", Groups: []string{"dev", "system:authenticated"}}},
		{"unknown token", "/api/v1/pods", "Bearer guess", http.StatusUnauthorized, nil},
		{"basic auth", "/api/v1/pods", "Basic c2VjcmV0", http.StatusUnauthorized, nil},
		{"no credentials", "/api/v1/pods", "", http.StatusUnauthorized, nil},
		{"anonymous health check", "/healthz", "", http.StatusOK, nil},
		{"anonymous version", "/version", "", http.StatusOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.code || !reflect.DeepEqual(seen, tt.user) {
				t.Errorf("code %d user %+v, want %d %+v", w.Code, seen, tt.code, tt.user)
			}
		})
	}
	if got := s.cfg.Tokens["secret"].Groups; !reflect.DeepEqual(got, []string{"dev"}) {
		t.Errorf("authentication changed the token's groups to %v", got)
	}
}

// The user a request sees is its own: authenticate appends
// system:authenticated to a copy, never into the token table's slice
// (which concurrent requests share).
func TestAuthenticateDoesNotShareGroups(t *testing.T) {
	s := newTestServer(t)
	tokens, err := LoadTokenFile(writeTokenFile(t, "tok,alice,u1,\"a,b,c\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Tokens = tokens
	h := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := UserFrom(r.Context())
		u.Groups[0] = "changed-by-a-handler"
	}))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Authorization", "Bearer tok")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got := s.cfg.Tokens["tok"].Groups; !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("token table groups = %v after one request, want [a b c]", got)
	}
}
