package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

func csrPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func testCSR(t *testing.T, edit func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "node-csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM(t, "system:node:n1"),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}
	if edit != nil {
		edit(csr)
	}
	return csr
}

func TestCSRValidation(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*certificatesv1.CertificateSigningRequest)
		want []string
	}{
		{"valid", nil, nil},
		{"not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("hello") }, []string{"spec.request: Invalid value"}},
		{"a certificate, not a request", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})
		}, []string{"spec.request: Invalid value"}},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, []string{"spec.signerName: Required value"}},
		{"unqualified signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubelet" }, []string{"spec.signerName: Invalid value"}},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, []string{"spec.usages: Required value"}},
		{"unknown usage", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = []certificatesv1.KeyUsage{"flying"} }, []string{"spec.usages[0]: Unsupported value"}},
		{"too short", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = new(int32(60)) }, []string{"spec.expirationSeconds: Invalid value"}},
		{"approved and denied", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
				{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}, {Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		}, []string{"status.conditions: Invalid value"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, csrStrategy{}.Validate(testCSR(t, tt.edit)), tt.want...)
		})
	}
}

func TestCSRRequesterAndSubresources(t *testing.T) {
	st := csrStrategy{}
	csr := testCSR(t, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Username = "forged" })
	st.RecordRequester(csr, &user.DefaultInfo{Name: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers"}})
	if csr.Spec.Username != "system:bootstrap:abcdef" || csr.Spec.Groups[0] != "system:bootstrappers" {
		t.Errorf("requester %q %v", csr.Spec.Username, csr.Spec.Groups)
	}

	approved := csr.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	approved.Status.Certificate = []byte("smuggled")
	st.PrepareSubresourceUpdate("approval", approved, csr)
	if !hasCondition(approved, certificatesv1.CertificateApproved) || approved.Status.Certificate != nil || approved.Status.Conditions[0].LastUpdateTime.IsZero() {
		t.Errorf("after /approval: %+v", approved.Status)
	}

	issued := approved.DeepCopy()
	issued.Status.Conditions = nil // /status may not drop the approval
	issued.Status.Certificate = []byte("-----BEGIN CERTIFICATE-----\nAQ==\n-----END CERTIFICATE-----\n")
	st.PrepareSubresourceUpdate("status", issued, approved)
	if !hasCondition(issued, certificatesv1.CertificateApproved) || len(issued.Status.Certificate) == 0 {
		t.Errorf("after /status: %+v", issued.Status)
	}
	if got := csrCondition(issued); got != "Approved,Issued" {
		t.Errorf("condition cell %q", got)
	}
	// A condition /status adds stays where the update put it; the approval
	// it lists is the stored one.
	more := issued.DeepCopy()
	more.Status.Conditions[0].Message = "changed through /status"
	more.Status.Conditions = append(more.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "Checked", Status: corev1.ConditionTrue})
	st.PrepareSubresourceUpdate("status", more, issued)
	if c := more.Status.Conditions; len(c) != 2 || c[0].Type != certificatesv1.CertificateApproved || c[0].Message != "" || c[1].Type != "Checked" {
		t.Errorf("after adding a condition through /status: %+v", c)
	}

	unapproved := issued.DeepCopy()
	unapproved.Status.Conditions = nil
	unapproved.Status.Certificate = []byte("other")
	apitest.CheckErrorFields(t, st.ValidateUpdate(unapproved, issued), "status.conditions: Forbidden", "status.certificate: Invalid value")
}
