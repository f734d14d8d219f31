package rbac

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The counts of upstream's v1.37 testdata (cluster-roles.yaml plus
// controller-roles.yaml, and so on), and skiff's own roles and bindings
// (system:skiff:server-joiner, system:skiff:trace-reporter,
// system:skiff:journey-peer, system:skiff:journey-viewer).
func TestBootstrapCounts(t *testing.T) {
	p := Bootstrap()
	got := []int{len(p.ClusterRoles), len(p.ClusterRoleBindings), len(p.Roles), len(p.RoleBindings)}
	if want := []int{32 + 41 + 4, 13 + 41 + 3, 7, 7}; !slices.Equal(got, want) {
		t.Errorf("cluster roles, cluster role bindings, roles, role bindings = %v, want %v", got, want)
	}
}

func TestBootstrapNamesAreUnique(t *testing.T) {
	p := Bootstrap()
	kinds := map[string][]metav1.ObjectMeta{}
	for _, r := range p.ClusterRoles {
		kinds["ClusterRole"] = append(kinds["ClusterRole"], r.ObjectMeta)
	}
	for _, b := range p.ClusterRoleBindings {
		kinds["ClusterRoleBinding"] = append(kinds["ClusterRoleBinding"], b.ObjectMeta)
	}
	for _, r := range p.Roles {
		kinds["Role"] = append(kinds["Role"], r.ObjectMeta)
	}
	for _, b := range p.RoleBindings {
		kinds["RoleBinding"] = append(kinds["RoleBinding"], b.ObjectMeta)
	}
	for kind, metas := range kinds {
		seen := map[string]bool{}
		for _, m := range metas {
			key := m.Namespace + "/" + m.Name
			if seen[key] {
				t.Errorf("%s %q appears twice", kind, key)
			}
			seen[key] = true
		}
	}
}

func TestBootstrapMetadata(t *testing.T) {
	p := Bootstrap()
	var metas []metav1.ObjectMeta
	for _, r := range p.ClusterRoles {
		metas = append(metas, r.ObjectMeta)
	}
	for _, b := range p.ClusterRoleBindings {
		metas = append(metas, b.ObjectMeta)
	}
	for _, r := range p.Roles {
		metas = append(metas, r.ObjectMeta)
		if r.Namespace != "kube-system" && r.Namespace != "kube-public" {
			t.Errorf("Role %q in namespace %q", r.Name, r.Namespace)
		}
	}
	for _, b := range p.RoleBindings {
		metas = append(metas, b.ObjectMeta)
		if b.Namespace != "kube-system" && b.Namespace != "kube-public" {
			t.Errorf("RoleBinding %q in namespace %q", b.Name, b.Namespace)
		}
	}
	for _, m := range metas {
		if m.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" {
			t.Errorf("%s: labels %v lack kubernetes.io/bootstrapping=rbac-defaults", m.Name, m.Labels)
		}
		if !reflect.DeepEqual(m.Annotations, map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}) {
			t.Errorf("%s: annotations %v", m.Name, m.Annotations)
		}
	}
}

// TestBootstrapRulesAreValid: each rule grants verbs on either resources
// of named API groups or non-resource URLs, as RBAC's validation wants (a
// role that fails it is never stored).
func TestBootstrapRulesAreValid(t *testing.T) {
	p := Bootstrap()
	check := func(name string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			resources := len(r.Resources) > 0
			urls := len(r.NonResourceURLs) > 0
			if len(r.Verbs) == 0 || resources == urls || resources && len(r.APIGroups) == 0 {
				t.Errorf("%s: invalid rule %+v", name, r)
			}
		}
	}
	for _, r := range p.ClusterRoles {
		check(r.Name, r.Rules)
	}
	for _, r := range p.Roles {
		check(r.Namespace+"/"+r.Name, r.Rules)
	}
}

func TestBootstrapBindingsReferToRoles(t *testing.T) {
	p := Bootstrap()
	clusterRoles := map[string]bool{}
	for _, r := range p.ClusterRoles {
		clusterRoles[r.Name] = true
	}
	nsRoles := map[string]bool{}
	for _, r := range p.Roles {
		nsRoles[r.Namespace+"/"+r.Name] = true
	}
	for _, b := range p.ClusterRoleBindings {
		if b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" || !clusterRoles[b.RoleRef.Name] {
			t.Errorf("ClusterRoleBinding %q refers to %+v, not a cluster role of the policy", b.Name, b.RoleRef)
		}
	}
	for _, b := range p.RoleBindings {
		ok := b.RoleRef.Kind == "Role" && nsRoles[b.Namespace+"/"+b.RoleRef.Name] ||
			b.RoleRef.Kind == "ClusterRole" && clusterRoles[b.RoleRef.Name]
		if b.RoleRef.APIGroup != rbacv1.GroupName || !ok {
			t.Errorf("RoleBinding %q refers to %+v, not a role of the policy", b.Namespace+"/"+b.Name, b.RoleRef)
		}
	}
}

// Each controller role is bound to the kube-system service account of the
// controller's name, and to nothing else.
func TestBootstrapControllerBindings(t *testing.T) {
	p := Bootstrap()
	n := 0
	for _, b := range p.ClusterRoleBindings {
		name, ok := strings.CutPrefix(b.Name, "system:controller:")
		if !ok {
			continue
		}
		n++
		want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: name}}
		if b.RoleRef.Name != b.Name || !reflect.DeepEqual(b.Subjects, want) {
			t.Errorf("%s binds %q to %+v", b.Name, b.RoleRef.Name, b.Subjects)
		}
	}
	if n != 41 {
		t.Errorf("%d controller bindings, want 41", n)
	}
}

func TestBootstrapAggregation(t *testing.T) {
	p := Bootstrap()
	tests := []struct{ role, selects, labelledInto string }{
		{"admin", "admin", ""},
		{"edit", "edit", "admin"},
		{"view", "view", "edit"},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			r := clusterRoleNamed(t, p, tt.role)
			want := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-" + tt.selects: "true"}},
			}}
			if !reflect.DeepEqual(r.AggregationRule, want) {
				t.Errorf("aggregation rule %+v", r.AggregationRule)
			}
			if r.Rules != nil {
				t.Errorf("rules %v, want none before aggregation", r.Rules)
			}
			if tt.labelledInto != "" && r.Labels["rbac.authorization.k8s.io/aggregate-to-"+tt.labelledInto] != "true" {
				t.Errorf("labels %v, want aggregate-to-%s", r.Labels, tt.labelledInto)
			}
			source := clusterRoleNamed(t, p, "system:aggregate-to-"+tt.selects)
			if source.Labels["rbac.authorization.k8s.io/aggregate-to-"+tt.selects] != "true" || len(source.Rules) == 0 {
				t.Errorf("%s: labels %v, %d rules", source.Name, source.Labels, len(source.Rules))
			}
		})
	}
}

// Exact rules, as upstream's testdata lists them.
func TestBootstrapExactRules(t *testing.T) {
	p := Bootstrap()
	tests := []struct {
		role string
		want []rbacv1.PolicyRule
	}{
		{"system:node-bootstrapper", []rbacv1.PolicyRule{{
			Verbs: []string{"create", "get", "list", "watch"}, APIGroups: []string{"certificates.k8s.io"},
			Resources: []string{"certificatesigningrequests"},
		}}},
		{"system:discovery", []rbacv1.PolicyRule{{
			Verbs: []string{"get"},
			NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
				"/openapi", "/openapi/*", "/readyz", "/version", "/version/"},
		}}},
		{"system:public-info-viewer", []rbacv1.PolicyRule{{
			Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/"},
		}}},
		{"system:basic-user", []rbacv1.PolicyRule{
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"},
				Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
		}},
		{"cluster-admin", []rbacv1.PolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		}},
		{"system:certificates.k8s.io:legacy-unknown-approver", []rbacv1.PolicyRule{{
			Verbs: []string{"approve"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
			ResourceNames: []string{"kubernetes.io/legacy-unknown"},
		}}},
		{"system:controller:legacy-service-account-token-cleaner", []rbacv1.PolicyRule{
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{"kube-apiserver-legacy-service-account-token-tracking"}},
			{Verbs: []string{"delete", "patch"}, APIGroups: []string{""}, Resources: []string{"secrets"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			if got := clusterRoleNamed(t, p, tt.role).Rules; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rules\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestBootstrapAggregateToView(t *testing.T) {
	r := clusterRoleNamed(t, Bootstrap(), "system:aggregate-to-view")
	for _, resource := range []string{"pods", "pods/log", "pods/status"} {
		for _, verb := range []string{"get", "list", "watch"} {
			if !rulesAllow(r.Rules, resourceRequest(nil, verb, "team", "", resource, "p")) {
				t.Errorf("does not allow %s %s", verb, resource)
			}
		}
	}
	for _, rule := range r.Rules {
		if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "*") {
			t.Errorf("rule %+v reaches secrets", rule)
		}
		if !slices.Equal(rule.Verbs, []string{"get", "list", "watch"}) {
			t.Errorf("rule %+v allows more than reading", rule)
		}
	}
}

func TestBootstrapClusterRoleBindingSubjects(t *testing.T) {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	userSubject := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	tests := []struct {
		binding string
		want    []rbacv1.Subject
	}{
		{"cluster-admin", []rbacv1.Subject{group("system:masters")}},
		{"system:basic-user", []rbacv1.Subject{group("system:authenticated")}},
		{"system:discovery", []rbacv1.Subject{group("system:authenticated")}},
		{"system:public-info-viewer", []rbacv1.Subject{group("system:authenticated"), group("system:unauthenticated")}},
		{"system:monitoring", []rbacv1.Subject{group("system:monitoring")}},
		{"system:service-account-issuer-discovery", []rbacv1.Subject{group("system:serviceaccounts")}},
		{"system:node", nil},
		{"system:node-proxier", []rbacv1.Subject{userSubject("system:kube-proxy")}},
		{"system:kube-scheduler", []rbacv1.Subject{userSubject("system:kube-scheduler")}},
		{"system:kube-dns", []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "kube-dns"}}},
	}
	p := Bootstrap()
	for _, tt := range tests {
		t.Run(tt.binding, func(t *testing.T) {
			i := slices.IndexFunc(p.ClusterRoleBindings, func(b rbacv1.ClusterRoleBinding) bool { return b.Name == tt.binding })
			if i < 0 {
				t.Fatal("no such binding")
			}
			if got := p.ClusterRoleBindings[i].Subjects; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("subjects %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Bootstrap's objects share no memory between calls.
func TestBootstrapFreshCopy(t *testing.T) {
	a := Bootstrap()
	clusterRoleNamed(t, a, "cluster-admin").Rules[0].Verbs[0] = "get"
	clusterRoleNamed(t, a, "view").Labels["x"] = "y"
	b := Bootstrap()
	if clusterRoleNamed(t, b, "cluster-admin").Rules[0].Verbs[0] != "*" || clusterRoleNamed(t, b, "view").Labels["x"] != "" {
		t.Error("a change to one policy shows in the next")
	}
}

// The whole policy, aggregated as the clusterrole-aggregation controller
// would, decides requests through the Authorizer.
func TestBootstrapAuthorize(t *testing.T) {
	p := Bootstrap()
	aggregate(t, p.ClusterRoles)
	if got, want := clusterRoleNamed(t, p, "view").Rules, clusterRoleNamed(t, p, "system:aggregate-to-view").Rules; !reflect.DeepEqual(got, want) {
		t.Errorf("aggregated view has %d rules, want those of system:aggregate-to-view (%d)", len(got), len(want))
	}
	p.RoleBindings = append(p.RoleBindings, rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bob-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
	}, rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "ann-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ann"}},
	})
	a := New(policyLister(p))

	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	ann := &user.DefaultInfo{Name: "ann", Groups: []string{user.AllAuthenticated}}
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	kubelet := &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	scheduler := &user.DefaultInfo{Name: user.KubeScheduler, Groups: []string{user.AllAuthenticated}}
	url := func(u user.Info, path string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "get", Path: path}
	}
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"view lists pods", resourceRequest(bob, "list", "team", "", "pods", ""), true},
		{"view reads a pod's log", resourceRequest(bob, "get", "team", "", "pods/log", "p"), true},
		{"view reads a deployment's scale", resourceRequest(bob, "get", "team", "apps", "deployments/scale", "d"), true},
		{"view gets no secret", resourceRequest(bob, "get", "team", "", "secrets", "s"), false},
		{"view creates no pod", resourceRequest(bob, "create", "team", "", "pods", ""), false},
		{"view execs into no pod", resourceRequest(bob, "create", "team", "", "pods/exec", "p"), false},
		{"view lists no pods elsewhere", resourceRequest(bob, "list", "other", "", "pods", ""), false},
		{"admin, through edit, gets secrets", resourceRequest(ann, "get", "team", "", "secrets", "s"), true},
		{"admin, through edit and view, lists pods", resourceRequest(ann, "list", "team", "", "pods", ""), true},
		{"admin creates role bindings", resourceRequest(ann, "create", "team", "rbac.authorization.k8s.io", "rolebindings", ""), true},
		{"admin changes no quota", resourceRequest(ann, "update", "team", "", "resourcequotas", "q"), false},
		{"the authenticated discover APIs", url(bob, "/apis/apps/v1"), true},
		{"the authenticated review themselves", resourceRequest(bob, "create", "", "authorization.k8s.io", "selfsubjectaccessreviews", ""), true},
		{"the unauthenticated read the version", url(anonymous, "/version"), true},
		{"the unauthenticated discover no APIs", url(anonymous, "/apis"), false},
		{"the unauthenticated list no pods", resourceRequest(anonymous, "list", "team", "", "pods", ""), false},
		{"nodes get nothing from RBAC", resourceRequest(kubelet, "get", "team", "", "secrets", "s"), false},
		{"the scheduler binds pods", resourceRequest(scheduler, "create", "team", "", "pods/binding", "p"), true},
		{"the scheduler takes its lease", resourceRequest(scheduler, "update", "kube-system", "coordination.k8s.io", "leases", "kube-scheduler"), true},
		{"the scheduler takes no lease outside kube-system", resourceRequest(scheduler, "update", "team", "coordination.k8s.io", "leases", "other"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.attrs)
			if err != nil || (d == authorizer.DecisionAllow) != tt.allow {
				t.Errorf("%v %q %v, want allowed %v", d, reason, err, tt.allow)
			}
		})
	}
}

// aggregate sets the rules of each aggregating cluster role to those of the
// cluster roles its selectors match, until nothing changes: what the
// clusterrole-aggregation controller will do.
func aggregate(t *testing.T, clusterRoles []rbacv1.ClusterRole) {
	t.Helper()
	for changed := true; changed; {
		changed = false
		for i := range clusterRoles {
			if clusterRoles[i].AggregationRule == nil {
				continue
			}
			var gathered []rbacv1.PolicyRule
			for _, ls := range clusterRoles[i].AggregationRule.ClusterRoleSelectors {
				sel, err := metav1.LabelSelectorAsSelector(&ls)
				if err != nil {
					t.Fatal(err)
				}
				for j, other := range clusterRoles {
					if j == i || !sel.Matches(labels.Set(other.Labels)) {
						continue
					}
					for _, r := range other.Rules {
						if !slices.ContainsFunc(gathered, func(g rbacv1.PolicyRule) bool { return reflect.DeepEqual(g, r) }) {
							gathered = append(gathered, r)
						}
					}
				}
			}
			if !reflect.DeepEqual(gathered, clusterRoles[i].Rules) {
				clusterRoles[i].Rules = gathered
				changed = true
			}
		}
	}
}

// policyLister serves p through the roles Lister of rbac_test.go.
func policyLister(p Policy) *roles {
	l := &roles{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}}
	for i := range p.ClusterRoles {
		l.clusterRoles[p.ClusterRoles[i].Name] = &p.ClusterRoles[i]
	}
	for i := range p.Roles {
		l.roles[p.Roles[i].Namespace+"/"+p.Roles[i].Name] = &p.Roles[i]
	}
	for i := range p.ClusterRoleBindings {
		l.crbs = append(l.crbs, &p.ClusterRoleBindings[i])
	}
	for i := range p.RoleBindings {
		l.rbs = append(l.rbs, &p.RoleBindings[i])
	}
	return l
}

func clusterRoleNamed(t *testing.T, p Policy, name string) *rbacv1.ClusterRole {
	t.Helper()
	i := slices.IndexFunc(p.ClusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == name })
	if i < 0 {
		t.Fatalf("no cluster role %q", name)
	}
	return &p.ClusterRoles[i]
}

// resourceRequest describes a request; resource may end in /subresource.
func resourceRequest(u user.Info, verb, namespace, group, resource, name string) authorizer.AttributesRecord {
	res, sub, _ := strings.Cut(resource, "/")
	return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: namespace, APIGroup: group,
		Resource: res, Subresource: sub, Name: name, ResourceRequest: true}
}

func rulesAllow(rules []rbacv1.PolicyRule, attrs authorizer.Attributes) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return RuleAllows(attrs, &r) })
}
