package controlplane_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// tokenClient is a client that authenticates with token.
func tokenClient(t *testing.T, s *servertest.Server, token string) kubernetes.Interface {
	t.Helper()
	admin := s.RESTConfig()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: admin.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServiceAccountTokens: a TokenRequest gives a JWT that authenticates
// as the service account (whoami; 403 beyond its rights), that external
// systems verify with the served OpenID key set, and that stops working
// once the pod it is bound to is gone; pods get the kube-api-access volume
// and namespaces the CA ConfigMap it projects.
func TestServiceAccountTokens(t *testing.T) {
	s := servertest.Start(t)
	admin, ctx := s.Client(), t.Context()
	var token string
	waitAllowed(t, "a token of default/default", func() error {
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err == nil {
			token = tr.Status.Token
			if got := time.Until(tr.Status.ExpirationTimestamp.Time); got < 59*time.Minute || got > time.Hour {
				t.Errorf("expires in %v, want an hour", got)
			}
		}
		return err
	})
	sa := tokenClient(t, s, token)
	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || review.Status.UserInfo.Username != "system:serviceaccount:default:default" ||
		!strings.Contains(strings.Join(review.Status.UserInfo.Groups, ","), "system:serviceaccounts:default") {
		t.Fatalf("whoami: %+v %v", review, err)
	}
	checkTokenReview(t, admin, token)
	_, err = sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "the account lists pods", err, `User "system:serviceaccount:default:default" cannot list resource "pods"`)
	checkExternalVerification(t, sa, token)

	_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](60)}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes") {
		t.Errorf("a one-minute token: %v", err)
	}
	checkBoundToPod(t, s, admin)
}

func ptrTo[T any](v T) *T { return &v }

// checkExternalVerification verifies token as a system outside the
// cluster would: the issuer's discovery document names the key set, whose
// key checks the signature.
func checkExternalVerification(t *testing.T, c kubernetes.Interface, token string) {
	ctx := t.Context()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err != nil || json.Unmarshal(raw, &doc) != nil || doc.Issuer != "https://kubernetes.default.svc.cluster.local" ||
		doc.JWKSURI != doc.Issuer+"/openid/v1/jwks" {
		t.Fatalf("discovery: %s %v", raw, err)
	}
	raw, err = c.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	var keys jose.JSONWebKeySet
	if err != nil || json.Unmarshal(raw, &keys) != nil || len(keys.Keys) != 1 {
		t.Fatalf("jwks: %s %v", raw, err)
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.Claims
	if err := parsed.Claims(keys.Keys[0].Key, &claims); err != nil || claims.Issuer != doc.Issuer ||
		claims.Subject != "system:serviceaccount:default:default" || parsed.Headers[0].KeyID != keys.Keys[0].KeyID {
		t.Errorf("verify with the key set: %+v %v", claims, err)
	}
}

// checkBoundToPod: a pod gets the API access volume; a token bound to it
// works while it exists and not after.
func checkBoundToPod(t *testing.T, s *servertest.Server, admin kubernetes.Interface) {
	ctx := t.Context()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-user"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	pod, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") ||
		pod.Spec.Containers[0].VolumeMounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
		t.Errorf("pod's volumes %+v mounts %+v", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
	}
	waitAllowed(t, "the CA ConfigMap", func() error {
		cm, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil && !strings.Contains(cm.Data["ca.crt"], "BEGIN CERTIFICATE") {
			t.Errorf("kube-root-ca.crt holds %q", cm.Data)
		}
		return err
	})
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := tokenClient(t, s, tr.Status.Token)
	if _, err := bound.Discovery().ServerVersion(); err != nil {
		t.Errorf("bound token while its pod exists: %v", err)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, pod.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "the bound token to stop working", 30*time.Second, func(context.Context) (bool, string) {
		_, err := bound.Discovery().ServerVersion()
		return apierrors.IsUnauthorized(err), ""
	})
}

// checkTokenReview: a TokenReview of token says who it is and for which
// audiences; of another audience or a bad token, not authenticated.
func checkTokenReview(t *testing.T, admin kubernetes.Interface, token string) {
	t.Helper()
	review := func(token string, audiences ...string) authenticationv1.TokenReviewStatus {
		r, err := admin.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview: %v", err)
		}
		return r.Status
	}
	st := review(token)
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:default" || len(st.Audiences) == 0 {
		t.Errorf("review of the token: %+v", st)
	}
	if st := review(token, "somewhere-else"); st.Authenticated || !strings.Contains(st.Error, "somewhere-else") {
		t.Errorf("review for another audience: %+v", st)
	}
	if st := review("not-a-token"); st.Authenticated {
		t.Errorf("review of a bad token: %+v", st)
	}
	_, err := admin.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.token") {
		t.Errorf("review without a token: %v, want Invalid spec.token", err)
	}
}
