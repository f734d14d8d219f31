package apiserver

import (
	"context"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// UserFrom returns the user a request was authenticated as.
func UserFrom(ctx context.Context) (user.Info, bool) { return genericrequest.UserFrom(ctx) }

// anonymousPaths answer requests without credentials when the server does
// not authorize (with an authorizer, it decides what system:anonymous may
// see: system:public-info-viewer gives these).
var anonymousPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

// publicPath answers anyone, anonymous requests or not: the cluster CA,
// which joining nodes fetch before they can trust the server (and check
// against the hash their token carries).
const publicPath = "/cacerts"

// anonymous is who an unauthenticated request is, as kube-apiserver's
// --anonymous-auth has it.
var anonymous = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

// authenticate puts the request's user in its context. Credentials no
// authenticator accepts get 401. A request without any is
// system:anonymous, for the authorizer to decide, when the server
// authorizes and allows anonymous requests; else it gets 401, but on the
// public path and (anonymous requests allowed) the anonymous paths.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := s.authn.AuthenticateRequest(r)
		switch {
		case ok:
			next.ServeHTTP(w, r.WithContext(genericrequest.WithUser(r.Context(), resp.User)))
		case r.URL.Path == publicPath:
			next.ServeHTTP(w, r)
		case s.cfg.NoAnonymous, err != nil:
			codec.WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
		case s.cfg.Authorize:
			next.ServeHTTP(w, r.WithContext(genericrequest.WithUser(r.Context(), anonymous)))
		case anonymousPaths[r.URL.Path]:
			next.ServeHTTP(w, r)
		default:
			codec.WriteError(w, apierrors.NewUnauthorized("Unauthorized"))
		}
	})
}
