package apiserver

import (
	"net/http"
	"slices"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
)

// refuseBootstrapper answers 403 and returns true when r comes from a
// bootstrapper and asks more than discovering the API and its own
// certificates: what Kubernetes' system:node-bootstrapper and discovery
// roles grant, until skiff authorizes every request (RBAC, issue 16).
func (s *Server) refuseBootstrapper(w http.ResponseWriter, r *http.Request) bool {
	u, ok := UserFrom(r.Context())
	if !ok || !authn.IsBootstrapper(u) {
		return false
	}
	attrs, err := s.attributes(r, u)
	switch {
	case err != nil:
		return false // route answers the bad path
	case attrs.ResourceRequest && attrs.APIGroup == "certificates.k8s.io" && attrs.Resource == "certificatesigningrequests" &&
		attrs.Subresource == "" && slices.Contains([]string{"create", "get", "list", "watch"}, attrs.Verb):
		return false
	case !attrs.ResourceRequest && attrs.Verb == "get" && isDiscoveryPath(attrs.Path):
		return false
	case attrs.ResourceRequest && slices.Contains([]string{"selfsubjectreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews"}, attrs.Resource):
		return false // system:basic-user's, every user's
	}
	codec.WriteError(w, forbidden(attrs, ""))
	return true
}

// isDiscoveryPath is /version or an API discovery document.
func isDiscoveryPath(p string) bool {
	p = strings.TrimSuffix(p, "/")
	return p == "/version" || p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/")
}
