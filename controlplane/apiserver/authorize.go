package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer decides requests after authentication (package rbac's): it
// allows, or has no opinion, and says why.
type Authorizer interface {
	Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error)
}

// Chain asks its authorizers in order: the first to allow or deny decides;
// when none does, the reasons they gave are joined.
type Chain []Authorizer

// Authorize implements Authorizer.
func (c Chain) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var reasons []string
	var errs []error
	for _, a := range c {
		d, reason, err := a.Authorize(ctx, attrs)
		if d != authorizer.DecisionNoOpinion {
			return d, reason, err
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return authorizer.DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// Rules lists the rules every authorizer of the chain that can list them
// gives u in namespace (what kubectl auth can-i --list shows).
func (c Chain) Rules(u user.Info, namespace string) ([]rbacv1.PolicyRule, []error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	for _, a := range c {
		if l, ok := a.(ruleLister); ok {
			r, e := l.Rules(u, namespace)
			rules, errs = append(rules, r...), append(errs, e...)
		}
	}
	return rules, errs
}

// RoleRules resolves a role reference with the first authorizer of the
// chain that knows roles (RBAC).
func (c Chain) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	for _, a := range c {
		if r, ok := a.(ruleResolver); ok {
			return r.RoleRules(ref, namespace)
		}
	}
	return nil, fmt.Errorf("no authorizer knows %s %q", ref.Kind, ref.Name)
}

// SetAuthorizer installs the authorizer a server built with
// Config.Authorize consults, once its caches are synced. Until then only
// system:masters get through; the others get 503 and a Retry-After.
func (s *Server) SetAuthorizer(a Authorizer) { s.authz.Store(&a) }

// authorized decides r for the user it was authenticated as (decide);
// what is refused gets kube-apiserver's 403, written here (false). The
// few requests authentication lets through without a user (the cluster
// CA; health and version when the server does not authorize) pass.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	u, ok := UserFrom(r.Context())
	if !s.cfg.Authorize || !ok {
		return true
	}
	attrs, err := s.attributes(r, u)
	if err != nil {
		return true // the route answers the bad path
	}
	allowed, reason, err := s.decide(r.Context(), attrs)
	switch {
	case errors.Is(err, errAuthorizerStarting):
		// As kube-apiserver before its RBAC hook is done: not ready, and
		// client-go's retry waits for the Retry-After.
		w.Header().Set("Retry-After", "1")
		codec.WriteError(w, apierrors.NewServiceUnavailable(err.Error()))
		return false
	case allowed:
		if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
			info.authorized = reason
		}
		return true
	}
	codec.WriteError(w, forbidden(attrs, reason))
	return false
}

var errAuthorizerStarting = errors.New("the authorizer is starting: its roles and bindings are not loaded yet")

// decide is the authorization decision on attrs: everything when the
// server does not authorize (Config.Authorize false), everything for
// system:masters, else what the authorizer allows, with its reason.
func (s *Server) decide(ctx context.Context, attrs authorizer.Attributes) (allowed bool, reason string, err error) {
	if !s.cfg.Authorize || slices.Contains(attrs.GetUser().GetGroups(), user.SystemPrivilegedGroup) {
		return true, "", nil
	}
	a := s.authz.Load()
	if a == nil {
		return false, "", errAuthorizerStarting
	}
	d, reason, err := (*a).Authorize(ctx, attrs)
	if err != nil {
		reason = strings.TrimPrefix(strings.Join([]string{reason, err.Error()}, ": "), ": ")
	}
	return err == nil && d == authorizer.DecisionAllow, reason, nil
}

// attributes describes r as an authorizer sees it: a resource request's
// verb, group, version, resource, subresource, namespace and name, or a
// non-resource request's path and lower-case method.
func (s *Server) attributes(r *http.Request, u user.Info) (authorizer.AttributesRecord, error) {
	if s.delegated(r.URL.Path) {
		return extensionAttributes(r, u)
	}
	attrs := authorizer.AttributesRecord{User: u, Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	req, isResource, err := s.parseResourcePath(r)
	if !isResource {
		if attrs.Verb == "head" {
			attrs.Verb = "get"
		}
		return attrs, nil
	}
	if err != nil {
		return attrs, err
	}
	attrs.ResourceRequest, attrs.Verb = true, req.verb
	attrs.APIGroup, attrs.APIVersion = req.res.GVK.Group, req.res.GVK.Version
	attrs.Resource, attrs.Subresource = req.res.Plural, req.subresource
	attrs.Namespace, attrs.Name = req.namespace, req.name
	if attrs.Verb == "list" || attrs.Verb == "watch" {
		attrs.Name = selectedName(r)
	}
	return attrs, nil
}

// selectedName is, as kube-apiserver's request info has it, the name a
// list or watch selects with the field selector metadata.name=<name>, so
// that a user allowed one object may watch it.
func selectedName(r *http.Request) string {
	sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		return ""
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || len(path.IsValidPathSegmentName(name)) > 0 {
		return ""
	}
	return name
}

// forbidden is kube-apiserver's 403 for attrs: who cannot do what, where,
// and the authorizer's reason.
func forbidden(attrs authorizer.Attributes, reason string) error {
	msg := forbiddenMessage(attrs)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
	return apierrors.NewForbidden(gr, attrs.GetName(), errors.New(msg))
}

func forbiddenMessage(attrs authorizer.Attributes) string {
	name := attrs.GetUser().GetName()
	if !attrs.IsResourceRequest() {
		return fmt.Sprintf("User %q cannot %s path %q", name, attrs.GetVerb(), attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if ns := attrs.GetNamespace(); ns != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, attrs.GetVerb(), resource, attrs.GetAPIGroup(), ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, attrs.GetVerb(), resource, attrs.GetAPIGroup())
}
