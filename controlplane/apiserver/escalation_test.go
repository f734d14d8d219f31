package apiserver

import (
	"context"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

var readPods = rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}

// fakeRBAC: bob holds readPods; may bind the ClusterRole "edit" without
// holding it; view is readPods, edit and admin everything.
type fakeRBAC struct{}

func (fakeRBAC) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "bind" && a.GetResource() == "clusterroles" && a.GetName() == "edit" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (fakeRBAC) Rules(user.Info, string) ([]rbacv1.PolicyRule, []error) {
	return []rbacv1.PolicyRule{readPods}, nil
}

func (fakeRBAC) RoleRules(ref rbacv1.RoleRef, _ string) ([]rbacv1.PolicyRule, error) {
	if ref.Name == "view" {
		return []rbacv1.PolicyRule{readPods}, nil
	}
	return []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, nil
}

func TestCheckEscalation(t *testing.T) {
	s, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts, Authorize: true})
	if err != nil {
		t.Fatal(err)
	}
	s.SetAuthorizer(fakeRBAC{})
	ctx := genericrequest.WithUser(context.Background(), &user.DefaultInfo{Name: "bob", Groups: []string{"devs"}})
	meta := metav1.ObjectMeta{Namespace: "team", Name: "x"}
	binding := func(role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	}
	secrets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	tests := []struct {
		name string
		obj  runtime.Object
		want string // "" allowed
	}{
		{"a role within bob's rights", &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{readPods}}, ""},
		{"a role beyond them", &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{readPods, secrets}},
			`roles.rbac.authorization.k8s.io "x" is forbidden: user "bob" (groups=["devs"]) is attempting to grant RBAC permissions not currently held:` +
				"\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{"binding view, which bob holds", binding("view"), ""},
		{"binding admin", binding("admin"), "is attempting to grant RBAC permissions not currently held"},
		{"binding edit, which bob may bind", binding("edit"), ""},
	}
	for _, tt := range tests {
		kind := "RoleBinding"
		if _, ok := tt.obj.(*rbacv1.Role); ok {
			kind = "Role"
		}
		res := resourceFor(t, s, rbacv1.SchemeGroupVersion.WithKind(kind))
		err := s.checkEscalation(ctx, request{res: res, namespace: "team", name: "x", verb: "create"}, tt.obj)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
