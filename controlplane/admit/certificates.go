package admit

import (
	"context"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/skiff-lab/skiff/controlplane/pki"
)

var csrResource = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}

// CertificateSubjectRestriction refuses, as kube-apiserver's plugin of that
// name, a request to kubernetes.io/kube-apiserver-client for a certificate
// in the system:masters group: once signed, nothing could take its rights
// back before it expires.
type CertificateSubjectRestriction struct{ *admission.Handler }

// NewCertificateSubjectRestriction returns the plugin.
func NewCertificateSubjectRestriction() *CertificateSubjectRestriction {
	return &CertificateSubjectRestriction{admission.NewHandler(admission.Create)}
}

// Validate refuses the request if it asks for system:masters.
func (p *CertificateSubjectRestriction) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok || a.GetResource().GroupResource() != csrResource || a.GetSubresource() != "" ||
		csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := pki.ParseCSR(csr.Spec.Request)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to parse CSR: %v", err))
	}
	if slices.Contains(req.Subject.Organization, pki.MastersGroup) {
		return admission.NewForbidden(a, fmt.Errorf("use of %s signer with %s group is not allowed",
			certificatesv1.KubeAPIServerClientSignerName, pki.MastersGroup))
	}
	return nil
}
