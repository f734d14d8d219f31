package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// allowImpersonating lets alice impersonate user bob, group devs and the
// service account ns/robot.
type allowImpersonating struct{}

func (allowImpersonating) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	allowed := map[string]bool{"users//bob": true, "groups//devs": true, "serviceaccounts/ns/robot": true}
	if a.GetUser().GetName() == "alice" && a.GetVerb() == "impersonate" && allowed[a.GetResource()+"/"+a.GetNamespace()+"/"+a.GetName()] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func TestImpersonate(t *testing.T) {
	s, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts, Authorize: true})
	if err != nil {
		t.Fatal(err)
	}
	s.SetAuthorizer(allowImpersonating{})
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, tt := range []struct {
		what    string
		headers map[string][]string
		code    int
		user    *seenUser
		message string
	}{
		{"no impersonation", nil, 200, &seenUser{Name: "alice", Groups: []string{"system:authenticated"}}, ""},
		{"as bob", map[string][]string{"Impersonate-User": {"bob"}}, 200, &seenUser{Name: "bob", Groups: []string{"system:authenticated"}}, ""},
		{"as bob in devs", map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs"}}, 200,
			&seenUser{Name: "bob", Groups: []string{"devs", "system:authenticated"}}, ""},
		{"as a service account", map[string][]string{"Impersonate-User": {"system:serviceaccount:ns:robot"}}, 200,
			&seenUser{Name: "system:serviceaccount:ns:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}}, ""},
		{"as carol", map[string][]string{"Impersonate-User": {"carol"}}, 403, nil,
			`users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{"as bob in admins", map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"admins"}}, 403, nil,
			`groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`},
		{"as another account", map[string][]string{"Impersonate-User": {"system:serviceaccount:ns:other"}}, 403, nil,
			`serviceaccounts "other" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns"`},
		{"a group alone", map[string][]string{"Impersonate-Group": {"devs"}}, 400, nil,
			"requested impersonation of groups, a uid or extras without impersonating a user"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
		for k, vs := range tt.headers {
			r.Header[k] = vs
		}
		r = r.WithContext(genericrequest.WithUser(r.Context(), alice))
		w := httptest.NewRecorder()
		got, ok := s.impersonate(w, r)
		var seen *seenUser
		if u, has := UserFrom(got.Context()); ok && has {
			seen = &seenUser{Name: u.GetName(), Groups: u.GetGroups()}
		}
		var st metav1.Status
		code := 200
		if !ok {
			code = w.Code
			_ = json.Unmarshal(w.Body.Bytes(), &st)
		}
		if code != tt.code || !reflect.DeepEqual(seen, tt.user) || st.Message != tt.message || got.Header.Get("Impersonate-User") != "" && ok {
			t.Errorf("%s: %d %+v %q, want %d %+v %q", tt.what, code, seen, st.Message, tt.code, tt.user, tt.message)
		}
	}
}
