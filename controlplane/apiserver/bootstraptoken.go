package apiserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
)

// bootstrapTokens authenticates bootstrap tokens ("<id>.<secret>") as
// kube-apiserver does: against the kube-system Secret
// bootstrap-token-<id> of type bootstrap.kubernetes.io/token, whose secret
// matches, whose usage-bootstrap-authentication is "true", not expired nor
// being deleted. The user is system:bootstrap:<id>, in
// system:bootstrappers and the token's auth-extra-groups.
type bootstrapTokens struct {
	store   *store.Store
	secrets *registry.Resource
	now     func() time.Time
}

func (b *bootstrapTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if !bootstraputil.IsValidBootstrapToken(token) {
		return nil, false, nil // not a bootstrap token: another authenticator's
	}
	id, secretPart, _ := strings.Cut(token, ".")
	secret := &corev1.Secret{}
	err := b.store.Get(ctx, b.secrets.Key(metav1.NamespaceSystem, bootstraputil.BootstrapTokenSecretName(id)), secret)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	if reason := unusable(secret, secretPart, b.now()); reason != "" {
		slog.Debug("bootstrap token refused", "id", id, "reason", reason)
		return nil, false, nil
	}
	groups, err := bootstrapsecrets.GetGroups(secret)
	if err != nil {
		return nil, false, fmt.Errorf("bootstrap token %s: %w", id, err)
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: bootstrapapi.BootstrapUserPrefix + id, Groups: groups}}, true, nil
}

// unusable says why secret does not admit a token with secretPart, or "".
func unusable(secret *corev1.Secret, secretPart string, now time.Time) string {
	switch {
	case secret.Type != bootstrapapi.SecretTypeBootstrapToken:
		return "not a bootstrap token secret"
	case secret.DeletionTimestamp != nil:
		return "being deleted"
	case subtle.ConstantTimeCompare([]byte(bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenSecretKey)), []byte(secretPart)) != 1:
		return "wrong secret"
	case bootstrapsecrets.GetData(secret, bootstrapapi.BootstrapTokenUsageAuthentication) != "true":
		return "not for authentication"
	case bootstrapsecrets.HasExpired(secret, now):
		return "expired"
	}
	return ""
}

// isBootstrapper reports whether u joins with a bootstrap token.
func isBootstrapper(u user.Info) bool {
	return slices.Contains(u.GetGroups(), bootstrapapi.BootstrapDefaultGroup)
}

// refuseBootstrapper answers 403 and returns true when r comes from a
// bootstrapper and asks more than discovering the API and its own
// certificates: what Kubernetes' system:node-bootstrapper and discovery
// roles grant, until skiff authorizes every request (RBAC, issue 16).
func (s *Server) refuseBootstrapper(w http.ResponseWriter, r *http.Request) bool {
	u, ok := UserFrom(r.Context())
	if !ok || !isBootstrapper(u) {
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
	writeError(w, forbidden(attrs, ""))
	return true
}

// isDiscoveryPath is /version or an API discovery document.
func isDiscoveryPath(p string) bool {
	p = strings.TrimSuffix(p, "/")
	return p == "/version" || p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/")
}
