package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The requests here are answered before the store is reached, so the
// whole handler (metrics, authentication, routing) runs without etcd.

func TestHandlerWithoutStore(t *testing.T) {
	s := serverWith(t, map[string]authn.User{"admin-token": {Name: "admin", Groups: []string{"system:masters"}}}, "")
	h := s.Handler()
	tests := []struct {
		method, target string
		token          bool
		code           int
		kind           string // the kind of the JSON answer
		contains       string
	}{
		{"GET", "/api", true, 200, "APIVersions", `"versions":["v1"]`},
		{"GET", "/apis", true, 200, "APIGroupList", `"name":"apps"`},
		{"GET", "/apis/", true, 200, "APIGroupList", `"name":"apps"`},
		{"GET", "/api/", true, 200, "APIVersions", `"versions":["v1"]`},
		{"GET", "/apis/apps/", true, 200, "APIGroup", `"preferredVersion":{"groupVersion":"apps/v1"`},
		{"GET", "/apis/apps", true, 200, "APIGroup", `"preferredVersion":{"groupVersion":"apps/v1"`},
		{"GET", "/api/v1", true, 200, "APIResourceList", `"name":"pods/eviction"`},
		{"GET", "/apis/apps/v1", true, 200, "APIResourceList", `"name":"deployments/scale"`},
		{"GET", "/apis/coordination.k8s.io/v1", true, 200, "APIResourceList", `"name":"leases"`},
		{"GET", "/openapi/v3", true, 200, "", `"apis/apps/v1":{"serverRelativeURL":"/openapi/v3/apis/apps/v1"}`},
		{"GET", "/openapi/v3/api/v1", true, 200, "", `"/api/v1/namespaces/{namespace}/pods/{name}/status"`},
		{"GET", "/openapi/v3/apis/batch/v1beta1", true, 404, "", ""},
		{"GET", "/version", false, 200, "", `"gitVersion"`},
		{"GET", "/api/v1", false, 401, "Status", `"reason":"Unauthorized"`},
		{"GET", "/apis/extensions", true, 404, "Status", `"reason":"NotFound"`},
		{"GET", "/api/v1/widgets", true, 404, "Status", `"reason":"NotFound"`},
		{"GET", "/api/v1/pods/web", true, 400, "Status", `"reason":"BadRequest"`},
		{"PUT", "/api/v1/namespaces/default/pods", true, 405, "Status", `"reason":"MethodNotAllowed"`},
		{"GET", "/metrics", true, 200, "", "apiserver_request_total"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			if tt.token {
				r.Header.Set("Authorization", "Bearer admin-token")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			body := w.Body.String()
			if w.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", w.Code, tt.code, body)
			}
			if tt.kind != "" {
				var meta metav1.TypeMeta
				if err := json.Unmarshal(w.Body.Bytes(), &meta); err != nil || meta.Kind != tt.kind {
					t.Errorf("kind %q (%v), want %s", meta.Kind, err, tt.kind)
				}
			}
			if !strings.Contains(body, tt.contains) {
				t.Errorf("body lacks %s:\n%.600s", tt.contains, body)
			}
		})
	}
}

func TestHandlerRejectsLargeBodies(t *testing.T) {
	s := serverWith(t, map[string]authn.User{"t": {Name: "admin"}}, "")
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", strings.NewReader("{}"))
	r.ContentLength = maxBodyBytes + 1
	r.Header.Set("Authorization", "Bearer t")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("code %d, want 413: %s", w.Code, w.Body)
	}
}

// A review asked for as a Table is refused with 406, as kube-apiserver
// does for what it cannot turn into one.
func TestReviewAsTableNotAcceptable(t *testing.T) {
	s := serverWith(t, map[string]authn.User{"t": {Name: "admin", Groups: []string{"system:masters"}}}, "")
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`
	for accept, code := range map[string]int{"application/json;as=Table;v=v1;g=meta.k8s.io": 406, "application/json": 201} {
		r := httptest.NewRequest(http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer t")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if w.Code != code {
			t.Errorf("Accept %s: code %d, want %d: %s", accept, w.Code, code, w.Body)
		}
	}
}

func TestHandlerNotAcceptable(t *testing.T) {
	s := serverWith(t, map[string]authn.User{"t": {Name: "admin", Groups: []string{"system:masters"}}}, "")
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)
	r.Header.Set("Authorization", "Bearer t")
	r.Header.Set("Accept", "text/html")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusNotAcceptable || !strings.Contains(w.Body.String(), `"reason":"NotAcceptable"`) {
		t.Errorf("code %d, want 406 NotAcceptable: %s", w.Code, w.Body)
	}
}
