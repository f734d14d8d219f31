package rbac

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// roles is a Lister over fixed objects.
type roles struct {
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role // namespace/name
	crbs         []*rbacv1.ClusterRoleBinding
	rbs          []*rbacv1.RoleBinding
}

func (r *roles) ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) { return r.crbs, nil }
func (r *roles) RoleBindings(ns string) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, b := range r.rbs {
		if b.Namespace == ns {
			out = append(out, b)
		}
	}
	return out, nil
}
func (r *roles) ClusterRole(name string) (*rbacv1.ClusterRole, error) {
	if c, ok := r.clusterRoles[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("clusterrole.rbac.authorization.k8s.io %q not found", name)
}
func (r *roles) Role(ns, name string) (*rbacv1.Role, error) {
	if c, ok := r.roles[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("role.rbac.authorization.k8s.io %q not found", name)
}

func rule(verbs, groups, resources string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), APIGroups: strings.Split(groups, ","),
		Resources: strings.Split(resources, ","), ResourceNames: names}
}

func ref(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
}

func testRoles() *roles {
	return &roles{
		clusterRoles: map[string]*rbacv1.ClusterRole{
			"view":     {Rules: []rbacv1.PolicyRule{rule("get,list,watch", "", "pods,pods/log"), rule("get", "apps", "deployments,*/scale")}},
			"admin":    {Rules: []rbacv1.PolicyRule{rule("*", "*", "*")}},
			"health":   {Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/api/*"}}}},
			"one-cm":   {Rules: []rbacv1.PolicyRule{rule("get,update", "", "configmaps", "settings")}},
			"scale-up": {Rules: []rbacv1.PolicyRule{rule("update", "apps", "*/scale")}},
		},
		roles: map[string]*rbacv1.Role{"team/secrets": {Rules: []rbacv1.PolicyRule{rule("get", "", "secrets")}}},
		crbs: []*rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "ops"}, RoleRef: ref("ClusterRole", "admin"),
				Subjects: []rbacv1.Subject{{Kind: "Group", Name: "ops"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "everyone-health"}, RoleRef: ref("ClusterRole", "health"),
				Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "dangling"}, RoleRef: ref("ClusterRole", "gone"),
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "eve"}}},
		},
		rbs: []*rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bob-view"}, RoleRef: ref("ClusterRole", "view"),
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ci-secrets"}, RoleRef: ref("Role", "secrets"),
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ci"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "amy-cm"}, RoleRef: ref("ClusterRole", "one-cm"),
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "amy"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "ci-scale"}, RoleRef: ref("ClusterRole", "scale-up"),
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ci", Namespace: "team"}}},
		},
	}
}

func TestAuthorize(t *testing.T) {
	a := New(testRoles())
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
	ci := &user.DefaultInfo{Name: "system:serviceaccount:team:ci", Groups: []string{"system:serviceaccounts"}}
	res := func(u user.Info, verb, ns, group, resource, sub, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: ns, APIGroup: group, Resource: resource,
			Subresource: sub, Name: name, ResourceRequest: true}
	}
	url := func(u user.Info, verb, path string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
	}
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"bob lists pods in team", res(bob, "list", "team", "", "pods", "", ""), true},
		{"bob reads a pod's log", res(bob, "get", "team", "", "pods", "log", "p"), true},
		{"bob execs", res(bob, "create", "team", "", "pods", "exec", "p"), false},
		{"bob creates a pod", res(bob, "create", "team", "", "pods", "", ""), false},
		{"bob lists pods elsewhere", res(bob, "list", "default", "", "pods", "", ""), false},
		{"bob lists pods cluster-wide", res(bob, "list", "", "", "pods", "", ""), false},
		{"bob reads a deployment's scale", res(bob, "get", "team", "apps", "deployments", "scale", "d"), true},
		{"bob reads a replicaset", res(bob, "get", "team", "apps", "replicasets", "", "r"), false},
		{"bob reads a secret", res(bob, "get", "team", "", "secrets", "", "s"), false},
		{"ops does anything", res(&user.DefaultInfo{Name: "x", Groups: []string{"ops"}}, "delete", "kube-system", "rbac.authorization.k8s.io", "roles", "", "r"), true},
		{"health for the authenticated", url(bob, "get", "/healthz"), true},
		{"prefix URL", url(bob, "get", "/api/v1"), true},
		{"other URL", url(bob, "get", "/metrics"), false},
		{"URL with another verb", url(bob, "post", "/healthz"), false},
		{"the service account of a binding's namespace", res(ci, "get", "team", "", "secrets", "", "s"), true},
		{"the service account named in another namespace's binding", res(ci, "update", "other", "apps", "statefulsets", "scale", "x"), true},
		{"another service account", res(&user.DefaultInfo{Name: "system:serviceaccount:other:ci"}, "get", "team", "", "secrets", "", "s"), false},
		{"a named object", res(&user.DefaultInfo{Name: "amy"}, "update", "team", "", "configmaps", "", "settings"), true},
		{"another object", res(&user.DefaultInfo{Name: "amy"}, "update", "team", "", "configmaps", "", "other"), false},
		{"named objects are not listed", res(&user.DefaultInfo{Name: "amy"}, "list", "team", "", "configmaps", "", ""), false},
	}
	for _, tt := range tests {
		d, reason, err := a.Authorize(context.Background(), tt.attrs)
		if err != nil || (d == authorizer.DecisionAllow) != tt.allow {
			t.Errorf("%s: %v %q %v, want allowed %v", tt.name, d, reason, err, tt.allow)
		}
	}
	d, reason, _ := a.Authorize(context.Background(), res(bob, "get", "team", "", "secrets", "", "s"))
	if d != authorizer.DecisionNoOpinion {
		t.Errorf("a denial is %v, want no opinion", d)
	}
	if _, reason, _ = a.Authorize(context.Background(), res(bob, "list", "team", "", "pods", "", "")); reason != `RBAC: allowed by RoleBinding "team/bob-view" of ClusterRole "view" to User "bob"` {
		t.Errorf("reason %q", reason)
	}
	eve := &user.DefaultInfo{Name: "eve"}
	if _, reason, _ = a.Authorize(context.Background(), res(eve, "list", "", "", "pods", "", "")); !strings.Contains(reason, `clusterrole.rbac.authorization.k8s.io "gone" not found`) {
		t.Errorf("a binding to a missing role: reason %q", reason)
	}
}

func TestRules(t *testing.T) {
	a := New(testRoles())
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:authenticated"}}
	if rules, errs := a.Rules(bob, "team"); len(rules) != 3 || len(errs) != 0 {
		t.Errorf("bob's rules in team: %v %v, want health's and view's", rules, errs)
	}
	if rules, _ := a.Rules(bob, ""); len(rules) != 1 || rules[0].NonResourceURLs == nil {
		t.Errorf("bob's cluster-wide rules: %v", rules)
	}
}
