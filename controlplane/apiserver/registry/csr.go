package registry

import (
	"encoding/pem"
	"slices"
	"strings"
	"time"

	"github.com/skiff-lab/skiff/controlplane/pki"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
)

// csrStrategy is certificates.k8s.io/v1 CertificateSigningRequest, as
// kube-apiserver keeps it: the requester (spec.username, uid, groups,
// extra) is recorded from who creates it, the spec never changes, the
// approval conditions (Approved, Denied) are written only through
// /approval and the certificate and other conditions only through
// /status.
type csrStrategy struct{ BaseStrategy }

// minCSRDuration is the shortest spec.expirationSeconds.
const minCSRDuration = 600

// approvalConditions are what /approval writes.
var approvalConditions = []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied}

func (csrStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*certificatesv1.CertificateSigningRequest).Status = certificatesv1.CertificateSigningRequestStatus{}
}

// RecordRequester stamps the requester on a new request.
func (csrStrategy) RecordRequester(obj runtime.Object, u user.Info) {
	spec := &obj.(*certificatesv1.CertificateSigningRequest).Spec
	spec.Username, spec.UID, spec.Groups, spec.Extra = u.GetName(), u.GetUID(), slices.Clone(u.GetGroups()), nil
	for k, v := range u.GetExtra() {
		if spec.Extra == nil {
			spec.Extra = map[string]certificatesv1.ExtraValue{}
		}
		spec.Extra[k] = slices.Clone(v)
	}
}

func (csrStrategy) Validate(obj runtime.Object) field.ErrorList {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if _, err := pki.ParseCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), "<request>", err.Error()))
	}
	errs = append(errs, validateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	for i, u := range csr.Spec.Usages {
		if !slices.Contains(knownUsages, u) {
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, usageNames()))
		}
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < minCSRDuration {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	return append(errs, validateCSRStatus(csr.Status)...)
}

// validateSignerName wants a qualified name, <DNS subdomain>/<path>.
func validateSignerName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" {
		return field.ErrorList{field.Invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(domain) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func validateCSRStatus(st certificatesv1.CertificateSigningRequestStatus) field.ErrorList {
	path := field.NewPath("status")
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range st.Conditions {
		p := path.Child("conditions").Index(i)
		switch {
		case c.Type == "":
			errs = append(errs, field.Required(p.Child("type"), ""))
		case seen[c.Type]:
			errs = append(errs, field.Duplicate(p.Child("type"), c.Type))
		case slices.Contains(approvalConditions, c.Type) && c.Status != corev1.ConditionTrue:
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []string{string(corev1.ConditionTrue)}))
		}
		seen[c.Type] = true
	}
	if seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied] {
		errs = append(errs, field.Invalid(path.Child("conditions"), "Approved, Denied", "Approved and Denied conditions are mutually exclusive"))
	}
	if len(st.Certificate) > 0 {
		if block, _ := pem.Decode(st.Certificate); block == nil || block.Type != "CERTIFICATE" {
			errs = append(errs, field.Invalid(path.Child("certificate"), "<certificate data>", "must contain at least one CERTIFICATE PEM block"))
		}
	}
	return errs
}

// PrepareForUpdate keeps the spec: a request never changes.
func (csrStrategy) PrepareForUpdate(obj, old runtime.Object) {
	obj.(*certificatesv1.CertificateSigningRequest).Spec = old.(*certificatesv1.CertificateSigningRequest).Spec
}

// PrepareSubresourceUpdate keeps what sub may not change: /status keeps
// the approval, /approval keeps the certificate and the other conditions.
func (csrStrategy) PrepareSubresourceUpdate(sub string, obj, old runtime.Object) {
	csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	isApproval := func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return slices.Contains(approvalConditions, c.Type)
	}
	switch sub {
	case "status":
		csr.Status.Conditions = keepApproval(csr.Status.Conditions, prev.Status.Conditions, isApproval)
	case "approval":
		// Conditions only, as kube-apiserver: ValidateUpdate keeps an
		// approval or denial from being taken back.
		csr.Status.Certificate = prev.Status.Certificate
	}
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = Now()
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = c.LastUpdateTime
		}
	}
}

// keepApproval is the conditions a /status update asks for with the
// stored approval or denial kept as it is: in its place in the list when
// the update lists it, else after the others.
func keepApproval(asked, stored []certificatesv1.CertificateSigningRequestCondition, isApproval func(certificatesv1.CertificateSigningRequestCondition) bool) []certificatesv1.CertificateSigningRequestCondition {
	approvals := filterConditions(stored, isApproval)
	var out []certificatesv1.CertificateSigningRequestCondition
	placed := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range asked {
		if !isApproval(c) {
			out = append(out, c)
			continue
		}
		for _, a := range approvals {
			if a.Type == c.Type && !placed[a.Type] {
				out, placed[a.Type] = append(out, a), true
			}
		}
	}
	for _, a := range approvals {
		if !placed[a.Type] {
			out = append(out, a)
		}
	}
	return out
}

func filterConditions(cs []certificatesv1.CertificateSigningRequestCondition, keep func(certificatesv1.CertificateSigningRequestCondition) bool) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range cs {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// ValidateUpdate refuses taking back an approval or a denial, and
// changing a certificate once issued.
func (csrStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	var errs field.ErrorList
	for _, t := range approvalConditions {
		if hasCondition(prev, t) && !hasCondition(csr, t) {
			errs = append(errs, field.Forbidden(field.NewPath("status", "conditions"), "updates may not remove a condition of type \""+string(t)+"\""))
		}
	}
	if len(prev.Status.Certificate) > 0 && !apiequality.Semantic.DeepEqual(csr.Status.Certificate, prev.Status.Certificate) {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", "updates may not modify existing certificate content"))
	}
	return errs
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == t })
}

func (csrStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, ageColumn,
		column("SignerName", "string", "The signer the request asks."),
		column("Requestor", "string", "Who made the request."),
		column("RequestedDuration", "string", "The certificate's lifetime asked for."),
		column("Condition", "string", "Approved, Denied, Failed and Issued, or Pending.")}
}

func (csrStrategy) Row(obj runtime.Object) []any {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	requested := "<none>"
	if s := csr.Spec.ExpirationSeconds; s != nil {
		requested = duration.HumanDuration(time.Duration(*s) * time.Second)
	}
	return []any{csr.Name, age(csr.CreationTimestamp), csr.Spec.SignerName, csr.Spec.Username, requested, csrCondition(csr)}
}

// csrCondition is kubectl's CONDITION cell.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	var parts []string
	for _, c := range csr.Status.Conditions {
		parts = append(parts, string(c.Type))
	}
	if len(csr.Status.Certificate) > 0 {
		parts = append(parts, "Issued")
	}
	if len(parts) == 0 {
		return "Pending"
	}
	return strings.Join(parts, ",")
}

func (csrStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
}

// knownUsages are certificates/v1's key usages.
var knownUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
}

func usageNames() []string {
	out := make([]string, len(knownUsages))
	for i, u := range knownUsages {
		out[i] = string(u)
	}
	return out
}
