package registry

import (
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacNames validates the names of RBAC objects: path segments.
func rbacNames(name string, _ bool) []string { return pathvalidation.IsValidPathSegmentName(name) }

// rbac.authorization.k8s.io/v1: Roles and ClusterRoles (rules), RoleBindings
// and ClusterRoleBindings (a role to subjects), validated as kube-apiserver
// does. Their names need only be path segments ("system:node" is one).

// roleStrategy serves Roles (namespaced) and ClusterRoles.
type roleStrategy struct {
	BaseStrategy
	namespaced bool
}

func (s roleStrategy) Validate(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range roleRules(obj) {
		errs = append(errs, validatePolicyRule(rule, s.namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

func (s roleStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList { return s.Validate(obj) }

func roleRules(obj runtime.Object) []rbacv1.PolicyRule {
	if r, ok := obj.(*rbacv1.Role); ok {
		return r.Rules
	}
	return obj.(*rbacv1.ClusterRole).Rules
}

// validatePolicyRule: verbs always; either non-resource URLs (cluster
// roles only, nothing else) or API groups and resources, resource names
// for one resource only.
func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups)+len(rule.Resources)+len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	if len(rule.ResourceNames) > 0 && len(rule.Resources) > 1 {
		errs = append(errs, field.Required(p.Child("resourceNames"), "resource names cannot apply to multiple resources"))
	}
	return errs
}

func (roleStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Created At", "date", "Time at which the object was created.")}
}

func (roleStrategy) Row(obj runtime.Object) []any {
	m := ObjectMeta(obj)
	return []any{m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339)}
}

// bindingStrategy serves RoleBindings (namespaced) and ClusterRoleBindings.
type bindingStrategy struct {
	BaseStrategy
	namespaced bool
}

// BindingOf is the role and subjects of a RoleBinding or
// ClusterRoleBinding.
func BindingOf(obj runtime.Object) (rbacv1.RoleRef, []rbacv1.Subject) {
	if b, ok := obj.(*rbacv1.RoleBinding); ok {
		return b.RoleRef, b.Subjects
	}
	b := obj.(*rbacv1.ClusterRoleBinding)
	return b.RoleRef, b.Subjects
}

// PrepareForCreate and PrepareForUpdate default what the v1 API defaults:
// roleRef.apiGroup, and the apiGroup of User and Group subjects, to
// rbac.authorization.k8s.io.
func (bindingStrategy) PrepareForCreate(obj runtime.Object)    { defaultBinding(obj) }
func (bindingStrategy) PrepareForUpdate(obj, _ runtime.Object) { defaultBinding(obj) }

func defaultBinding(obj runtime.Object) {
	var ref *rbacv1.RoleRef
	var subjects []rbacv1.Subject
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		ref, subjects = &b.RoleRef, b.Subjects
	case *rbacv1.ClusterRoleBinding:
		ref, subjects = &b.RoleRef, b.Subjects
	}
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		if s := &subjects[i]; s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func (s bindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	ref, subjects := BindingOf(obj)
	errs := s.validateRoleRef(ref)
	for i, sub := range subjects {
		errs = append(errs, validateSubject(sub, s.namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateUpdate also keeps the role a binding grants: to bind another,
// a new binding is made.
func (s bindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	errs := s.Validate(obj)
	ref, _ := BindingOf(obj)
	if oldRef, _ := BindingOf(old); ref != oldRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef"))
	}
	return errs
}

func (s bindingStrategy) validateRoleRef(ref rbacv1.RoleRef) field.ErrorList {
	p := field.NewPath("roleRef")
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if s.namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		return append(errs, field.Required(p.Child("name"), ""))
	}
	for _, msg := range pathvalidation.IsValidPathSegmentName(ref.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
	}
	return errs
}

// validateSubject: a named ServiceAccount (of a namespace, in a cluster
// binding) in the core group, or a User or Group in the RBAC group.
func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.Name == "" {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, strings.ToLower(s.Kind)+" name cannot be empty"))
		}
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func (bindingStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Role", "string", "Role is the role the binding grants."), ageColumn,
		wideColumn("Users", "string", "Users in the binding."), wideColumn("Groups", "string", "Groups in the binding."),
		wideColumn("ServiceAccounts", "string", "ServiceAccounts in the binding.")}
}

func (bindingStrategy) Row(obj runtime.Object) []any {
	ref, subjects := BindingOf(obj)
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, strings.TrimPrefix(s.Namespace+"/"+s.Name, "/"))
		}
	}
	m := ObjectMeta(obj)
	return []any{m.Name, ref.Kind + "/" + ref.Name, age(m.CreationTimestamp),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
