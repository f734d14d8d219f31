package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// allowPodReads allows get and list of pods, nothing else.
type allowPodReads struct{}

func (allowPodReads) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() && a.GetResource() == "pods" && a.GetSubresource() == "" && (a.GetVerb() == "get" || a.GetVerb() == "list") {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func TestAuthorized(t *testing.T) {
	s, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts, Authorize: true})
	if err != nil {
		t.Fatal(err)
	}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}
	decide := func(u user.Info, method, target string) (bool, metav1.Status) {
		r := httptest.NewRequest(method, target, nil)
		r = r.WithContext(genericrequest.WithUser(r.Context(), u))
		w := httptest.NewRecorder()
		ok := s.authorized(w, r)
		var st metav1.Status
		if !ok {
			_ = json.Unmarshal(w.Body.Bytes(), &st)
		}
		return ok, st
	}
	if ok, st := decide(bob, "GET", "/api/v1/namespaces/default/pods"); ok || st.Code != http.StatusServiceUnavailable {
		t.Errorf("before the authorizer: %v %d %q, want 503", ok, st.Code, st.Message)
	}
	if ok, _ := decide(admin, "DELETE", "/api/v1/namespaces/default/pods/p"); !ok {
		t.Error("system:masters refused")
	}
	s.SetAuthorizer(allowPodReads{})
	for _, tt := range []struct {
		method, target string
		allow          bool
		message        string
	}{
		{"GET", "/api/v1/namespaces/default/pods", true, ""},
		{"GET", "/api/v1/namespaces/default/pods/p", true, ""},
		{"POST", "/api/v1/namespaces/default/pods", false, `pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "default"`},
		{"GET", "/api/v1/namespaces/default/pods/p/log", false, `pods "p" is forbidden: User "bob" cannot get resource "pods/log" in API group "" in the namespace "default"`},
		{"GET", "/api/v1/nodes", false, `nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope`},
		{"GET", "/apis/apps/v1/namespaces/x/deployments", false, `deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API group "apps" in the namespace "x"`},
		{"GET", "/healthz", false, `forbidden: User "bob" cannot get path "/healthz"`},
	} {
		ok, st := decide(bob, tt.method, tt.target)
		if ok != tt.allow || !ok && (st.Code != http.StatusForbidden || st.Message != tt.message) {
			t.Errorf("%s %s: allowed %v, %d %q; want %v %q", tt.method, tt.target, ok, st.Code, st.Message, tt.allow, tt.message)
		}
	}
}
