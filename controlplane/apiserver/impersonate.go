package apiserver

import (
	"errors"
	"net/http"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// impersonate acts on the Impersonate-User, -Group, -Uid and -Extra-<key>
// headers as kube-apiserver does (kubectl --as, --as-group, --as-uid):
// the requester must be allowed the verb impersonate on each part asked
// for — users (or, for a service account's name, serviceaccounts in its
// namespace), groups, uids and userextras/<key> of authentication.k8s.io —
// and the request then goes on as that user, the headers removed. A refusal
// is written here (false).
func (s *Server) impersonate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	wanted, checks, err := authn.Impersonation(r.Header)
	if err != nil {
		codec.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return r, false
	}
	if wanted == nil {
		return r, true
	}
	requester, ok := UserFrom(r.Context())
	if !ok {
		codec.WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
		return r, false
	}
	for _, attrs := range checks {
		attrs.User = requester
		allowed, reason, err := s.decide(r.Context(), attrs)
		if errors.Is(err, errAuthorizerStarting) {
			w.Header().Set("Retry-After", "1")
			codec.WriteError(w, apierrors.NewServiceUnavailable(err.Error()))
			return r, false
		}
		if !allowed {
			codec.WriteError(w, forbidden(attrs, reason))
			return r, false
		}
	}
	for key := range r.Header {
		if strings.HasPrefix(key, "Impersonate-") {
			r.Header.Del(key)
		}
	}
	return r.WithContext(genericrequest.WithUser(r.Context(), wanted)), true
}
