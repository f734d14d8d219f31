package registry

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRBACValidation(t *testing.T) {
	pods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	healthz := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "ns"}
	role, clusterRole := roleStrategy{namespaced: true}, roleStrategy{}
	binding, clusterBinding := bindingStrategy{namespaced: true}, bindingStrategy{}
	tests := []struct {
		name     string
		strategy Strategy
		obj      runtime.Object
		want     string // "" valid, else a substring of the errors
	}{
		{"role", role, &rbacv1.Role{Rules: []rbacv1.PolicyRule{pods}}, ""},
		{"cluster role with a URL", clusterRole, &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{pods, healthz}}, ""},
		{"no verbs", role, &rbacv1.Role{Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}},
			"rules[0].verbs: Required value: verbs must contain at least one value"},
		{"URL in a role", role, &rbacv1.Role{Rules: []rbacv1.PolicyRule{healthz}},
			"rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs"},
		{"URL and resources", clusterRole, &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"},
			NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}}}}, "cannot apply to both regular resources and non-resource URLs"},
		{"no group", role, &rbacv1.Role{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}}}},
			"rules[0].apiGroups: Required value: resource rules must supply at least one api group"},
		{"names over two resources", role, &rbacv1.Role{Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""},
			Resources: []string{"pods", "secrets"}, ResourceNames: []string{"x"}}}}, "resource names cannot apply to multiple resources"},

		{"binding", binding, &rbacv1.RoleBinding{RoleRef: ref("Role", "r"), Subjects: []rbacv1.Subject{user, sa}}, ""},
		{"binding to a cluster role", binding, &rbacv1.RoleBinding{RoleRef: ref("ClusterRole", "view")}, ""},
		{"cluster binding to a role", clusterBinding, &rbacv1.ClusterRoleBinding{RoleRef: ref("Role", "r")},
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"another group", binding, &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "x", Kind: "Role", Name: "r"}},
			`roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"`},
		{"no role name", binding, &rbacv1.RoleBinding{RoleRef: ref("Role", "")}, "roleRef.name: Required value"},
		{"cluster binding of a service account without namespace", clusterBinding,
			&rbacv1.ClusterRoleBinding{RoleRef: ref("ClusterRole", "view"), Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}},
			"subjects[0].namespace: Required value"},
		{"user outside the RBAC group", binding, &rbacv1.RoleBinding{RoleRef: ref("Role", "r"), Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
			`subjects[0].apiGroup: Unsupported value: ""`},
		{"unknown subject kind", binding, &rbacv1.RoleBinding{RoleRef: ref("Role", "r"), Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}},
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`},
	}
	for _, tt := range tests {
		errs := tt.strategy.Validate(tt.obj).ToAggregate()
		switch {
		case tt.want == "" && errs != nil:
			t.Errorf("%s: %v", tt.name, errs)
		case tt.want != "" && (errs == nil || !strings.Contains(errs.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, errs, tt.want)
		}
	}
}

// TestBindingDefaults: as the v1 API, a binding's roleRef and its User
// and Group subjects without an apiGroup get rbac.authorization.k8s.io; a
// ServiceAccount subject keeps the core group.
func TestBindingDefaults(t *testing.T) {
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "bob"}, {Kind: rbacv1.GroupKind, Name: "devs"},
		{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "ns"}}
	rb := &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: subjects}
	crb := &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "c"}, Subjects: slices.Clone(subjects)}
	for _, tc := range []struct {
		strategy bindingStrategy
		obj      runtime.Object
	}{{bindingStrategy{namespaced: true}, rb}, {bindingStrategy{}, crb}} {
		tc.strategy.PrepareForCreate(tc.obj)
		if errs := tc.strategy.Validate(tc.obj); len(errs) > 0 {
			t.Errorf("%T with defaults: %v", tc.obj, errs)
		}
		ref, subs := BindingOf(tc.obj)
		if ref.APIGroup != rbacv1.GroupName || subs[0].APIGroup != rbacv1.GroupName || subs[1].APIGroup != rbacv1.GroupName || subs[2].APIGroup != "" {
			t.Errorf("%T defaulted to %+v %+v", tc.obj, ref, subs)
		}
	}
}

func TestRoleBindingKeepsItsRole(t *testing.T) {
	old := &rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "a"}}
	cur := old.DeepCopy()
	cur.RoleRef.Name = "b"
	if errs := (bindingStrategy{namespaced: true}).ValidateUpdate(cur, old).ToAggregate(); errs == nil || !strings.Contains(errs.Error(), "cannot change roleRef") {
		t.Errorf("changing roleRef: %v", errs)
	}
	cur = old.DeepCopy()
	cur.Subjects = []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "g"}}
	if errs := (bindingStrategy{namespaced: true}).ValidateUpdate(cur, old); len(errs) > 0 {
		t.Errorf("changing subjects: %v", errs)
	}
}

func TestRBACNamesAndRows(t *testing.T) {
	if msgs := rbacNames("system:node", false); len(msgs) > 0 {
		t.Errorf("system:node refused: %v", msgs)
	}
	if msgs := rbacNames("a/b", false); len(msgs) == 0 {
		t.Error("a/b accepted")
	}
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}, {Kind: "User", Name: "amy"}, {Kind: "Group", Name: "g"},
			{Kind: "ServiceAccount", Namespace: "ns", Name: "sa"}}}
	row := bindingStrategy{}.Row(b)
	if row[1] != "ClusterRole/view" || row[3] != "bob, amy" || row[4] != "g" || row[5] != "ns/sa" {
		t.Errorf("row %v", row)
	}
}
