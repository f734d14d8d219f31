package authn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiff-lab/skiff/controlplane/satoken"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// serviceAccountTokens authenticates the issuer's tokens as
// kube-apiserver does: signature, issuer, audience and lifetime first, then
// the service account and any object the token is bound to must still
// exist with the UIDs it names, and not be past deletion.
type serviceAccountTokens struct {
	issuer *satoken.Issuer
	lookup Lookup
}

func (a *serviceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	now := time.Now()
	c, err := a.issuer.Verify(token, now)
	if errors.Is(err, satoken.ErrNotOurs) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	k := c.Kubernetes
	info := serviceaccount.ServiceAccountInfo{Name: k.ServiceAccount.Name, Namespace: k.Namespace,
		UID: k.ServiceAccount.UID, CredentialID: "JTI=" + c.ID}
	checks := []struct {
		kind, namespace string
		ref             *satoken.Ref
	}{{"ServiceAccount", k.Namespace, &k.ServiceAccount}, {"Pod", k.Namespace, k.Pod}, {"Secret", k.Namespace, k.Secret}}
	for _, ch := range checks {
		if err := a.stillThere(ctx, ch.kind, ch.namespace, ch.ref, now); err != nil {
			return nil, false, err
		}
	}
	if k.Pod != nil {
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
	}
	if k.Node != nil {
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: authenticator.Audiences(c.Audience)}, true, nil
}

// stillThere checks that the object ref names (if any) exists with its UID
// and is not past its deletion.
func (a *serviceAccountTokens) stillThere(ctx context.Context, kind, namespace string, ref *satoken.Ref, now time.Time) error {
	if ref == nil {
		return nil
	}
	obj, err := a.lookup(ctx, kind, namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("service account token: %s %s/%s: %w", kind, namespace, ref.Name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetUID() != types.UID(ref.UID) {
		return fmt.Errorf("service account token: %s %s/%s has UID %s, the token names %s", kind, namespace, ref.Name, m.GetUID(), ref.UID)
	}
	if d := m.GetDeletionTimestamp(); d != nil && d.Time.Before(now) {
		return fmt.Errorf("service account token: %s %s/%s is being deleted", kind, namespace, ref.Name)
	}
	return nil
}
