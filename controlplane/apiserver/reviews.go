package apiserver

import (
	"context"
	"errors"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Reviews are resources that are only created, and answered from the
// request itself, never stored (kube-apiserver's SelfSubjectReview,
// SubjectAccessReview and their kind): POST the spec, get the status back.

// reviewResources are the review resources served.
func reviewResources() []*resource {
	return []*resource{
		{gvk: authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), plural: "selfsubjectreviews", singular: "selfsubjectreview",
			newObj: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, strategy: baseStrategy{},
			review: selfSubjectReview},
	}
}

// serveReview answers a review's create with what review makes of it.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, req request) error {
	if req.verb != "create" || req.name != "" {
		return apierrors.NewMethodNotSupported(req.res.groupResource(), req.verb)
	}
	obj := req.res.newObj()
	if err := decodeBody(w, r, req.res.gvk, obj); err != nil {
		return err
	}
	out, err := req.res.review(r.Context(), obj)
	if err != nil {
		return err
	}
	writeObject(w, r, http.StatusCreated, out, req.res.gvk)
	return nil
}

// selfSubjectReview is who the request was authenticated as (kubectl auth
// whoami).
func selfSubjectReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	u, ok := UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("no user in the request"))
	}
	review := obj.(*authenticationv1.SelfSubjectReview)
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			info.Extra[k] = v
		}
	}
	review.Status.UserInfo = info
	return review, nil
}
