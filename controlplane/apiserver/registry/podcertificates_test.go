package registry

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// stubRequest is a PKCS#10 request signed by key, as a kubelet sends.
func stubRequest(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func testPCR(stub []byte) *certificatesv1.PodCertificateRequest {
	return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "req-1", Namespace: "ns"},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/s", PodName: "p", PodUID: "u1",
			ServiceAccountName: "default", ServiceAccountUID: "u2", NodeName: "n", NodeUID: "u3", StubPKCS10Request: stub}}
}

func wantFieldErrors(t *testing.T, what string, errs field.ErrorList, want string) {
	t.Helper()
	switch {
	case want == "" && len(errs) > 0:
		t.Errorf("%s: %v, want none", what, errs)
	case want != "" && !strings.Contains(errs.ToAggregate().Error(), want):
		t.Errorf("%s: %v, want %q", what, errs, want)
	}
}

func TestPodCertificateRequestCreate(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 2048)
	s := podCertificateRequestStrategy{}
	for _, tt := range []struct {
		what string
		edit func(*certificatesv1.PodCertificateRequest)
		want string
	}{
		{"a kubelet's request", nil, ""},
		{"a day for kubernetes.io", func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName, r.Spec.MaxExpirationSeconds = "kubernetes.io/x", new(int32(86401))
		}, "must be in the range [3600, 86400]"},
		{"too short", func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = new(int32(60)) }, "must be in the range [3600, 7862400]"},
		{"a small RSA key", func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = stubRequest(t, small) },
			"RSA keys must have modulus size 3072 or 4096"},
		{"no stub request", func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = []byte("x") }, "must be a valid PKCS#10 CSR"},
		{"no pod UID", func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID = "" }, "spec.podUID: Invalid value: \"\": must not be empty"},
	} {
		r := testPCR(stubRequest(t, key))
		r.Status.CertificateChain = "left by the requester"
		if tt.edit != nil {
			tt.edit(r)
		}
		s.PrepareForCreate(r)
		if r.Status.CertificateChain != "" {
			t.Errorf("%s: status kept on create", tt.what)
		}
		wantFieldErrors(t, tt.what, s.Validate(r), tt.want)
	}
	r := testPCR(stubRequest(t, key))
	s.PrepareForCreate(r)
	if r.Spec.MaxExpirationSeconds == nil || *r.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("maxExpirationSeconds %v, want the default 86400", r.Spec.MaxExpirationSeconds)
	}
}

func TestPodCertificateRequestStatus(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pending := testPCR(stubRequest(t, key))
	podCertificateRequestStrategy{}.PrepareForCreate(pending)
	issued := func(pub crypto.PublicKey, life, refresh time.Duration) *certificatesv1.PodCertificateRequest {
		r := pending.DeepCopy()
		notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: notBefore, NotAfter: notBefore.Add(life)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, other)
		if err != nil {
			t.Fatal(err)
		}
		r.Status = certificatesv1.PodCertificateRequestStatus{
			Conditions:       []metav1.Condition{{Type: "Issued", Status: "True", Reason: "Signed", Message: "ok", LastTransitionTime: metav1.Now()}},
			CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			NotBefore:        &metav1.Time{Time: notBefore}, NotAfter: &metav1.Time{Time: notBefore.Add(life)},
			BeginRefreshAt: &metav1.Time{Time: notBefore.Add(refresh)}}
		return r
	}
	denied := pending.DeepCopy()
	denied.Status.Conditions = []metav1.Condition{{Type: "Denied", Status: "True", Reason: "Policy", Message: "no", LastTransitionTime: metav1.Now()}}
	good := issued(&key.PublicKey, 2*time.Hour, time.Hour)
	for _, tt := range []struct {
		what     string
		obj, old *certificatesv1.PodCertificateRequest
		want     string
	}{
		{"issued", good, pending, ""},
		{"denied", denied, pending, ""},
		{"issued to another key", issued(&other.PublicKey, 2*time.Hour, time.Hour), pending, "leaf certificate was not issued to the requested public key"},
		{"too short a life", issued(&key.PublicKey, 30*time.Minute, 15*time.Minute), pending, "leaf certificate lifetime must be >= 1 hour"},
		{"refresh at the end", issued(&key.PublicKey, 2*time.Hour, 2*time.Hour), pending, "must be at least 10 minutes before status.notAfter"},
		{"re-issued", issued(&key.PublicKey, 3*time.Hour, time.Hour), good, "immutable after PodCertificateRequest is issued, denied, or failed"},
		{"an unknown condition", func() *certificatesv1.PodCertificateRequest {
			r := pending.DeepCopy()
			r.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "R", LastTransitionTime: metav1.Now()}}
			return r
		}(), pending, `Unsupported value: "Ready"`},
	} {
		wantFieldErrors(t, tt.what, podCertificateRequestStrategy{}.ValidateSubresourceUpdate("status", tt.obj, tt.old), tt.want)
	}
	changed := good.DeepCopy()
	changed.Spec.PodName = "q"
	wantFieldErrors(t, "a spec update", podCertificateRequestStrategy{}.ValidateUpdate(changed, good), "field is immutable")
}
