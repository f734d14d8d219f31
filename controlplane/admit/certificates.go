package admit

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

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

// SignerPermission is kube-apiserver's CertificateApproval and
// CertificateSigning plugins: a change to a request through one
// subresource is let through only if the user may do a verb to the
// request's signer (signers/<signerName>, or signers/<domain>/* for all of
// a domain's signers). Without it, the RBAC rule on the subresource alone
// would let an approver of one signer approve for all.
type SignerPermission struct {
	*admission.Handler
	authz       authorizer.Authorizer
	verb        string
	subresource string
	// changes reports whether an update is one the verb is needed for.
	changes func(old, csr *certificatesv1.CertificateSigningRequest) bool
}

// NewCertificateApproval returns the CertificateApproval plugin: approving
// or denying (certificatesigningrequests/approval) needs `approve`.
func NewCertificateApproval(authz authorizer.Authorizer) *SignerPermission {
	return &SignerPermission{Handler: admission.NewHandler(admission.Update), authz: authz, verb: "approve", subresource: "approval",
		changes: func(_, _ *certificatesv1.CertificateSigningRequest) bool { return true }}
}

// NewCertificateSigning returns the CertificateSigning plugin: setting or
// changing status.certificate needs `sign`.
func NewCertificateSigning(authz authorizer.Authorizer) *SignerPermission {
	return &SignerPermission{Handler: admission.NewHandler(admission.Update), authz: authz, verb: "sign", subresource: "status",
		changes: func(old, csr *certificatesv1.CertificateSigningRequest) bool {
			return !bytes.Equal(old.Status.Certificate, csr.Status.Certificate)
		}}
}

// Validate refuses the update if it needs the verb and the user may not
// do it to the signer.
func (p *SignerPermission) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	old, oldOK := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
	if !ok || !oldOK || a.GetResource().GroupResource() != csrResource || a.GetSubresource() != p.subresource || !p.changes(old, csr) {
		return nil
	}
	return forSigner(ctx, p.authz, a, p.verb, csr.Spec.SignerName)
}

// forSigner refuses a's user unless it may verb the signer, by its name or
// by its domain's wildcard.
func forSigner(ctx context.Context, authz authorizer.Authorizer, a admission.Attributes, verb, signer string) error {
	names := []string{signer}
	if domain, _, ok := strings.Cut(signer, "/"); ok {
		names = append(names, domain+"/*")
	}
	for _, name := range names {
		decision, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{User: a.GetUserInfo(), Verb: verb,
			APIGroup: certificatesv1.GroupName, APIVersion: "*", Resource: "signers", Name: name, ResourceRequest: true})
		if err == nil && decision == authorizer.DecisionAllow {
			return nil
		}
	}
	return admission.NewForbidden(a, fmt.Errorf("user not permitted to %s requests with signerName %q", verb, signer))
}
