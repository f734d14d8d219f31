package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// ruleResolver is what the escalation check needs of the authorizer: the
// rules that apply to a user in a namespace, and a role's rules.
type ruleResolver interface {
	Rules(u user.Info, namespace string) ([]rbacv1.PolicyRule, []error)
	RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error)
}

// checkEscalation refuses, as kube-apiserver does, a role that grants or a
// binding that hands out rights its author does not hold: writing a Role
// or ClusterRole needs every one of its rules held (where it applies) or
// the escalate verb on it; a binding needs the bind verb on the role it
// refers to, or every rule of that role held. system:masters hold all.
func (s *Server) checkEscalation(ctx context.Context, req request, obj runtime.Object) error {
	u, ok := UserFrom(ctx)
	a := s.authz.Load()
	if !s.cfg.Authorize || req.res.GVK.Group != rbacv1.GroupName || !ok || a == nil ||
		slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return nil
	}
	resolver, ok := (*a).(ruleResolver)
	if !ok {
		return nil
	}
	m := registry.ObjectMeta(obj)
	verb, target, wanted, err := escalationTarget(obj, resolver, m.Namespace)
	if err != nil {
		return apierrors.NewForbidden(req.res.GroupResource(), m.Name, err)
	}
	attrs := authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: rbacv1.GroupName, APIVersion: "v1",
		Resource: target.resource, Namespace: m.Namespace, Name: target.name, ResourceRequest: true}
	if d, _, err := (*a).Authorize(ctx, attrs); err == nil && d == authorizer.DecisionAllow {
		return nil
	}
	held, resolveErrs := resolver.Rules(u, m.Namespace)
	if covered, missing := rbacvalidation.Covers(held, wanted); !covered {
		msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.GetName(), u.GetGroups(), compactRules(missing))
		if len(resolveErrs) > 0 {
			msg += fmt.Sprintf("; resolution errors: %v", errors.Join(resolveErrs...))
		}
		return apierrors.NewForbidden(req.res.GroupResource(), m.Name, errors.New(msg))
	}
	return nil
}

type roleTarget struct{ resource, name string }

// escalationTarget is the verb that would allow obj outright (escalate on
// a role, bind on a binding's role), what it applies to, and the rules obj
// hands out.
func escalationTarget(obj runtime.Object, resolver ruleResolver, namespace string) (string, roleTarget, []rbacv1.PolicyRule, error) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		return "escalate", roleTarget{"roles", o.Name}, o.Rules, nil
	case *rbacv1.ClusterRole:
		return "escalate", roleTarget{"clusterroles", o.Name}, o.Rules, nil
	}
	ref, _ := registry.BindingOf(obj)
	rules, err := resolver.RoleRules(ref, namespace)
	target := roleTarget{"clusterroles", ref.Name}
	if ref.Kind == "Role" {
		target.resource = "roles"
	}
	return "bind", target, rules, err
}

// compactRules shows rules as kube-apiserver's escalation message does,
// one per line: {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}.
func compactRules(rules []rbacv1.PolicyRule) string {
	lines := make([]string, len(rules))
	for i, r := range rules {
		var parts []string
		for _, f := range []struct {
			name   string
			values []string
		}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"ResourceNames", r.ResourceNames},
			{"NonResourceURLs", r.NonResourceURLs}, {"Verbs", r.Verbs}} {
			if len(f.values) > 0 {
				quoted := make([]string, len(f.values))
				for j, v := range f.values {
					quoted[j] = fmt.Sprintf("%q", v)
				}
				parts = append(parts, f.name+":["+strings.Join(quoted, ", ")+"]")
			}
		}
		lines[i] = "{" + strings.Join(parts, ", ") + "}"
	}
	return strings.Join(lines, "\n")
}
