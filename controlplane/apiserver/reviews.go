package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// Reviews are resources that are only created, and answered from the
// request itself, never stored (kube-apiserver's SelfSubjectReview,
// SubjectAccessReview and their kind): POST the spec, get the status back.

// reviewResources are the review resources served.
func (s *Server) reviewResources() []*registry.Resource {
	authz := authorizationv1.SchemeGroupVersion
	return []*registry.Resource{
		{GVK: authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), Plural: "selfsubjectreviews", Singular: "selfsubjectreview",
			NewObj: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, Strategy: registry.BaseStrategy{},
			Review: selfSubjectReview},
		{GVK: authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), Plural: "tokenreviews", Singular: "tokenreview",
			NewObj: func() runtime.Object { return &authenticationv1.TokenReview{} }, Strategy: registry.BaseStrategy{},
			Review: s.tokenReview},
		{GVK: authz.WithKind("SelfSubjectAccessReview"), Plural: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview",
			NewObj: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, Strategy: registry.BaseStrategy{},
			Review: s.selfSubjectAccessReview},
		{GVK: authz.WithKind("SubjectAccessReview"), Plural: "subjectaccessreviews", Singular: "subjectaccessreview",
			NewObj: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, Strategy: registry.BaseStrategy{},
			Review: s.subjectAccessReview},
		{GVK: authz.WithKind("LocalSubjectAccessReview"), Plural: "localsubjectaccessreviews", Singular: "localsubjectaccessreview",
			Namespaced: true, NewObj: func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, Strategy: registry.BaseStrategy{},
			Review: s.localSubjectAccessReview},
		{GVK: authz.WithKind("SelfSubjectRulesReview"), Plural: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview",
			NewObj: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, Strategy: registry.BaseStrategy{},
			Review: s.selfSubjectRulesReview},
	}
}

// serveReview answers a review's create with what review makes of it.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, req request) error {
	if req.verb != "create" || req.name != "" {
		return apierrors.NewMethodNotSupported(req.res.GroupResource(), req.verb)
	}
	if _, convert := codec.NegotiateOutput(r); convert != nil {
		// A review is no object of the API to list: no Table, no metadata.
		return negotiation.NewNotAcceptableConversionError(convert.String(), []string{req.res.GVK.String()})
	}
	obj := req.res.NewObj()
	if err := decodeBody(w, r, req.res.GVK, obj); err != nil {
		return err
	}
	if req.res.Namespaced {
		if m := registry.ObjectMeta(obj); m.Namespace == "" {
			m.Namespace = req.namespace
		}
		if err := checkIdentity(request{res: req.res, namespace: req.namespace, name: registry.ObjectMeta(obj).Name}, obj); err != nil {
			return err
		}
	}
	out, err := req.res.Review(r.Context(), obj)
	if err != nil {
		return err
	}
	writeObject(w, r, http.StatusCreated, out, req.res.GVK)
	return nil
}

// selfSubjectAccessReview: may the requester do what the spec describes
// (kubectl auth can-i)?
func (s *Server) selfSubjectAccessReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	u, ok := UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("no user in the request"))
	}
	review := obj.(*authorizationv1.SelfSubjectAccessReview)
	attrs, err := accessAttributes(u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	if err != nil {
		return nil, err
	}
	review.Status, err = s.accessStatus(ctx, attrs)
	return review, err
}

// subjectAccessReview: may the user the spec names do what it describes?
func (s *Server) subjectAccessReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	review := obj.(*authorizationv1.SubjectAccessReview)
	spec := review.Spec
	if spec.User == "" && len(spec.Groups) == 0 {
		return nil, apierrors.NewBadRequest("at least one of user or group must be specified")
	}
	extra := map[string][]string{}
	for k, v := range spec.Extra {
		extra[k] = v
	}
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: extra}
	attrs, err := accessAttributes(u, spec.ResourceAttributes, spec.NonResourceAttributes)
	if err != nil {
		return nil, err
	}
	review.Status, err = s.accessStatus(ctx, attrs)
	return review, err
}

// localSubjectAccessReview: may the user the spec names do what it
// describes in the review's namespace (its only scope)?
func (s *Server) localSubjectAccessReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	review := obj.(*authorizationv1.LocalSubjectAccessReview)
	switch spec := review.Spec; {
	case spec.NonResourceAttributes != nil:
		return nil, apierrors.NewBadRequest("spec.nonResourceAttributes: disallowed on this kind of request")
	case spec.ResourceAttributes != nil && spec.ResourceAttributes.Namespace != review.Namespace:
		return nil, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: " + review.Namespace)
	}
	out, err := s.subjectAccessReview(ctx, &authorizationv1.SubjectAccessReview{Spec: review.Spec})
	if err != nil {
		return nil, err
	}
	review.Status = out.(*authorizationv1.SubjectAccessReview).Status
	return review, nil
}

// accessAttributes are the authorizer's attributes of a review's spec:
// exactly one of a resource's or a path's.
func accessAttributes(u user.Info, res *authorizationv1.ResourceAttributes, path *authorizationv1.NonResourceAttributes) (authorizer.AttributesRecord, error) {
	attrs := authorizer.AttributesRecord{User: u}
	switch {
	case (res == nil) == (path == nil):
		return attrs, apierrors.NewBadRequest("exactly one of nonResourceAttributes or resourceAttributes must be specified")
	case res != nil:
		attrs.ResourceRequest, attrs.Verb, attrs.Namespace, attrs.Name = true, res.Verb, res.Namespace, res.Name
		attrs.APIGroup, attrs.APIVersion, attrs.Resource, attrs.Subresource = res.Group, res.Version, res.Resource, res.Subresource
	default:
		attrs.Verb, attrs.Path = path.Verb, path.Path
	}
	return attrs, nil
}

// accessStatus is the decision on attrs as a review's status.
func (s *Server) accessStatus(ctx context.Context, attrs authorizer.Attributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	allowed, reason, err := s.decide(ctx, attrs)
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, apierrors.NewServiceUnavailable(err.Error())
	}
	return authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}, nil
}

// ruleLister is what a rules review needs of the authorizer.
type ruleLister interface {
	Rules(u user.Info, namespace string) ([]rbacv1.PolicyRule, []error)
}

// selfSubjectRulesReview: what may the requester do in the spec's
// namespace (kubectl auth can-i --list)? Everything, without
// authorization or for system:masters.
func (s *Server) selfSubjectRulesReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	u, ok := UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("no user in the request"))
	}
	review := obj.(*authorizationv1.SelfSubjectRulesReview)
	if review.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	all := []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
	rules, errs := all, []error(nil)
	if s.cfg.Authorize && !slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		a := s.authz.Load()
		if a == nil {
			return nil, apierrors.NewServiceUnavailable(errAuthorizerStarting.Error())
		}
		lister, ok := (*a).(ruleLister)
		if !ok {
			return nil, apierrors.NewInternalError(errors.New("the authorizer cannot list rules"))
		}
		rules, errs = lister.Rules(u, review.Spec.Namespace)
	}
	review.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: len(errs) > 0}
	if len(errs) > 0 {
		review.Status.EvaluationError = errors.Join(errs...).Error()
	}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			review.Status.NonResourceRules = append(review.Status.NonResourceRules,
				authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		review.Status.ResourceRules = append(review.Status.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs,
			APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return review, nil
}

// selfSubjectReview is who the request was authenticated as (kubectl auth
// whoami).
func selfSubjectReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	u, ok := UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("no user in the request"))
	}
	review := obj.(*authenticationv1.SelfSubjectReview)
	review.Status.UserInfo = userInfo(u)
	return review, nil
}

// tokenReview: who is the bearer of spec.token, for the audiences the
// spec names (any the server's tokens are for, when it names none)?
// Only bearer tokens are looked at, as kube-apiserver does.
func (s *Server) tokenReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	review := obj.(*authenticationv1.TokenReview)
	if review.Spec.Token == "" {
		return nil, apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenReview").GroupKind(), "",
			field.ErrorList{field.Required(field.NewPath("spec", "token"), "")})
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+review.Spec.Token)
	resp, ok, err := s.authn.AuthenticateRequest(r)
	if err != nil {
		review.Status.Error = err.Error()
		return review, nil
	}
	if !ok {
		return review, nil
	}
	audiences := resp.Audiences
	if want := review.Spec.Audiences; len(want) > 0 {
		if audiences = resp.Audiences.Intersect(want); len(audiences) == 0 {
			review.Status.Error = fmt.Sprintf("token audiences %q is invalid for the target audiences %q", resp.Audiences, want)
			return review, nil
		}
	}
	review.Status.Authenticated = true
	review.Status.User = userInfo(resp.User)
	review.Status.Audiences = audiences
	return review, nil
}
