// Package rbac decides requests by Kubernetes' RBAC rules: a user may do
// what a rule of a role bound to it (to its name, one of its groups, or its
// service account) allows; the cluster roles bound cluster-wide count in
// every namespace, the roles and cluster roles bound in a namespace only
// there. RBAC only allows: a request no rule allows gets no opinion, for
// the next authorizer (or the final 403).
package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Lister gives the roles and bindings (from caches: never a read from the
// store per request). A missing role is an error wrapping a not-found.
type Lister interface {
	ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error)
	RoleBindings(namespace string) ([]*rbacv1.RoleBinding, error)
	ClusterRole(name string) (*rbacv1.ClusterRole, error)
	Role(namespace, name string) (*rbacv1.Role, error)
}

// Authorizer decides by the roles and bindings its Lister gives.
type Authorizer struct{ roles Lister }

// New returns an Authorizer over roles.
func New(roles Lister) *Authorizer { return &Authorizer{roles: roles} }

// Authorize allows what a rule bound to the user allows, saying by which
// binding; otherwise it has no opinion, and the reason names the roles it
// could not find.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var allowedBy string
	errs := a.visit(attrs.GetUser(), attrs.GetNamespace(), func(source string, rule *rbacv1.PolicyRule) bool {
		if RuleAllows(attrs, rule) {
			allowedBy = source
			return false
		}
		return true
	})
	if allowedBy != "" {
		return authorizer.DecisionAllow, "RBAC: allowed by " + allowedBy, nil
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, "RBAC: " + errors.Join(errs...).Error(), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// Rules lists every rule that applies to u in namespace (cluster-wide
// ones only when namespace is ""), with the errors met finding them: what
// kubectl auth can-i --list shows, and what escalation checks compare.
func (a *Authorizer) Rules(u user.Info, namespace string) ([]rbacv1.PolicyRule, []error) {
	var rules []rbacv1.PolicyRule
	errs := a.visit(u, namespace, func(_ string, rule *rbacv1.PolicyRule) bool {
		rules = append(rules, *rule)
		return true
	})
	return rules, errs
}

// visit calls fn with each rule bound to u, cluster-wide first, then in
// namespace, until fn returns false; it returns the errors met.
func (a *Authorizer) visit(u user.Info, namespace string, fn func(source string, rule *rbacv1.PolicyRule) bool) []error {
	var errs []error
	crbs, err := a.roles.ClusterRoleBindings()
	if err != nil {
		return []error{err}
	}
	for _, b := range crbs {
		subject, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := a.RoleRules(b.RoleRef, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		source := fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name, describe(subject))
		if !visitRules(rules, source, fn) {
			return nil
		}
	}
	if namespace == "" {
		return errs
	}
	rbs, err := a.roles.RoleBindings(namespace)
	if err != nil {
		return append(errs, err)
	}
	for _, b := range rbs {
		subject, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := a.RoleRules(b.RoleRef, namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		source := fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Namespace+"/"+b.Name, b.RoleRef.Kind, b.RoleRef.Name, describe(subject))
		if !visitRules(rules, source, fn) {
			return nil
		}
	}
	return errs
}

func visitRules(rules []rbacv1.PolicyRule, source string, fn func(string, *rbacv1.PolicyRule) bool) bool {
	for i := range rules {
		if !fn(source, &rules[i]) {
			return false
		}
	}
	return true
}

// RoleRules are the rules of the role ref names: a ClusterRole, or a Role
// of namespace.
func (a *Authorizer) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		r, err := a.roles.ClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "Role":
		if namespace != "" {
			r, err := a.roles.Role(namespace, ref.Name)
			if err != nil {
				return nil, err
			}
			return r.Rules, nil
		}
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// appliesTo returns the first subject that is u: its name, one of its
// groups, or its service account (of the binding's namespace when the
// subject names none).
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) (*rbacv1.Subject, bool) {
	for i, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if u.GetName() == s.Name {
				return &subjects[i], true
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.GetGroups(), s.Name) {
				return &subjects[i], true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && u.GetName() == serviceaccount.MakeUsername(ns, s.Name) {
				return &subjects[i], true
			}
		}
	}
	return nil, false
}

func describe(s *rbacv1.Subject) string {
	if s.Namespace != "" {
		return fmt.Sprintf("%s %q", s.Kind, s.Namespace+"/"+s.Name)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// RuleAllows reports whether rule allows the request attrs describes.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !matches(rule.Verbs, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return urlMatches(rule.NonResourceURLs, attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	return matches(rule.APIGroups, attrs.GetAPIGroup()) &&
		resourceMatches(rule.Resources, resource, attrs.GetSubresource()) &&
		(len(rule.ResourceNames) == 0 || attrs.GetName() != "" && slices.Contains(rule.ResourceNames, attrs.GetName()))
}

// matches: the list holds "*" or want.
func matches(list []string, want string) bool {
	return slices.Contains(list, rbacv1.VerbAll) || slices.Contains(list, want)
}

// resourceMatches: "*", the resource (with "/subresource"), or
// "*/subresource" for that subresource of any resource.
func resourceMatches(list []string, resource, subresource string) bool {
	for _, r := range list {
		if r == rbacv1.ResourceAll || r == resource || subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

// urlMatches: "*", the path, or a prefix of it ending in "*".
func urlMatches(list []string, path string) bool {
	for _, u := range list {
		if u == rbacv1.NonResourceAll || u == path || strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}
