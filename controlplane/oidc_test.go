package controlplane_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// issuer is an OpenID Connect issuer on 127.0.0.1: its discovery
// document, its key set, and ID tokens signed with its key.
type issuer struct {
	*httptest.Server
	key    *rsa.PrivateKey
	caFile string
}

func startIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss.URL, "jwks_uri": iss.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "response_types_supported": []string{"id_token"},
			"subject_types_supported": []string{"public"}, "authorization_endpoint": iss.URL + "/auth"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	iss.Server = httptest.NewTLSServer(mux)
	t.Cleanup(iss.Close)
	iss.caFile = filepath.Join(t.TempDir(), "issuer-ca.crt")
	if err := os.WriteFile(iss.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: iss.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return iss
}

// token is an ID token for sub in groups, for audience aud, expiring at exp.
func (iss *issuer) token(t *testing.T, sub, aud string, exp time.Time, groups ...string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: iss.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.Claims{Issuer: iss.URL, Subject: sub, Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(exp),
		IssuedAt: jwt.NewNumericDate(exp.Add(-2 * time.Hour))}
	tok, err := jwt.Signed(signer).Claims(claims).Claims(map[string]any{"groups": groups}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestOIDC: with --oidc-*, an ID token of the issuer is a user (prefixed
// name and groups) whom RBAC limits; an expired token or one for another
// audience is not.
func TestOIDC(t *testing.T) {
	iss := startIssuer(t)
	s := servertest.StartWith(t, func(c *controlplane.Config) {
		c.OIDC = authn.OIDC{IssuerURL: iss.URL, ClientID: "skiff", CAFile: iss.caFile, UsernamePrefix: "oidc:",
			GroupsClaim: "groups", GroupsPrefix: "oidc:"}
	})
	ctx := context.Background()
	admin := s.Client()
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "devs-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "oidc:devs"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(token string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(s.RESTConfig())
		cfg.BearerToken = token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	alice := as(iss.token(t, "alice", "skiff", time.Now().Add(time.Hour), "devs"))
	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "oidc:alice" || !slices.Contains(review.Status.UserInfo.Groups, "oidc:devs") {
		t.Fatalf("whoami with alice's ID token: %v %+v", err, review)
	}
	servertest.Eventually(t, "alice's group's RoleBinding in force", 10*time.Second, func(ctx context.Context) (bool, string) {
		_, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil, errString(err)
	})
	if _, err := alice.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice listing kube-system's secrets: %v, want Forbidden", err)
	}
	for name, token := range map[string]string{
		"expired":          iss.token(t, "alice", "skiff", time.Now().Add(-time.Minute), "devs"),
		"another audience": iss.token(t, "alice", "other", time.Now().Add(time.Hour), "devs"),
	} {
		if _, err := as(token).CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("an ID token %s: %v, want Unauthorized", name, err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
