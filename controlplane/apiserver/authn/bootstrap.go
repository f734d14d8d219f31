package authn

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	lookup Lookup
	now    func() time.Time
}

func (b *bootstrapTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if !bootstraputil.IsValidBootstrapToken(token) {
		return nil, false, nil // not a bootstrap token: another authenticator's
	}
	id, secretPart, _ := strings.Cut(token, ".")
	obj, err := b.lookup(ctx, "Secret", metav1.NamespaceSystem, bootstraputil.BootstrapTokenSecretName(id))
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	secret := obj.(*corev1.Secret)
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

// IsBootstrapper reports whether u joins with a bootstrap token.
func IsBootstrapper(u user.Info) bool {
	return slices.Contains(u.GetGroups(), bootstrapapi.BootstrapDefaultGroup)
}
