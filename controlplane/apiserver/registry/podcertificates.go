package registry

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podCertificateRequestStrategy is certificates.k8s.io/v1
// PodCertificateRequest, as kube-apiserver keeps it: a node asks a signer
// for a pod's certificate (NodeRestriction checks the pod, its service
// account and the node), the spec never changes, and the signer writes
// the outcome once through /status: Issued with the chain, or Denied or
// Failed.
type podCertificateRequestStrategy struct{ BaseStrategy }

const (
	defaultPodCertificateSeconds = 86400
	maxStubRequestBytes          = 10 * 1024
	maxCertificateChainBytes     = 100 * 1024
	// kubernetesSignerMaxSeconds bounds the lifetime kubernetes.io signers
	// may be asked for.
	kubernetesSignerMaxSeconds = 86400
)

// The conditions that end a request.
var podCertificateOutcomes = []string{
	certificatesv1.PodCertificateRequestConditionTypeIssued,
	certificatesv1.PodCertificateRequestConditionTypeDenied,
	certificatesv1.PodCertificateRequestConditionTypeFailed,
}

func (podCertificateRequestStrategy) PrepareForCreate(obj runtime.Object) {
	r := obj.(*certificatesv1.PodCertificateRequest)
	r.Status = certificatesv1.PodCertificateRequestStatus{}
	if r.Spec.MaxExpirationSeconds == nil {
		r.Spec.MaxExpirationSeconds = new(int32(defaultPodCertificateSeconds))
	}
}

func (podCertificateRequestStrategy) Validate(obj runtime.Object) field.ErrorList {
	r := obj.(*certificatesv1.PodCertificateRequest)
	spec := field.NewPath("spec")
	errs := validateSignerName(spec.Child("signerName"), r.Spec.SignerName)
	for name, v := range map[string]string{"podName": r.Spec.PodName, "serviceAccountName": r.Spec.ServiceAccountName, "nodeName": string(r.Spec.NodeName)} {
		errs = append(errs, requiredDNSSubdomain(v, spec.Child(name))...)
	}
	for name, v := range map[string]string{"podUID": string(r.Spec.PodUID), "serviceAccountUID": string(r.Spec.ServiceAccountUID), "nodeUID": string(r.Spec.NodeUID)} {
		if v == "" {
			errs = append(errs, field.Invalid(spec.Child(name), v, "must not be empty"))
		} else if len(v) > 128 {
			errs = append(errs, field.TooLong(spec.Child(name), v, 128))
		}
	}
	errs = append(errs, validatePodCertificateLifetime(r.Spec.SignerName, r.Spec.MaxExpirationSeconds, spec.Child("maxExpirationSeconds"))...)
	errs = append(errs, validateStubRequest(r.Spec.StubPKCS10Request, spec.Child("stubPKCS10Request"))...)
	for key := range r.Spec.UnverifiedUserAnnotations {
		if msgs := validation.IsDomainPrefixedKey(field.NewPath("x"), strings.ToLower(key)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(spec.Child("unverifiedUserAnnotations"), key, msgs.ToAggregate().Error()))
		}
	}
	return errs
}

// validatePodCertificateLifetime: an hour to 91 days (a day for the
// kubernetes.io signers).
func validatePodCertificateLifetime(signer string, seconds *int32, path *field.Path) field.ErrorList {
	if seconds == nil {
		return field.ErrorList{field.Required(path, "must be set")}
	}
	most := podCertificateMaxSeconds(signer)
	if *seconds < minPodCertificateSeconds || *seconds > most {
		return field.ErrorList{field.Invalid(path, *seconds, fmt.Sprintf("must be in the range [%d, %d]", minPodCertificateSeconds, most))}
	}
	return nil
}

// podCertificateMaxSeconds is the longest lifetime a signer may be asked
// for: 91 days, a day for the kubernetes.io signers.
func podCertificateMaxSeconds(signer string) int32 {
	if domain, _, _ := strings.Cut(signer, "/"); domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return kubernetesSignerMaxSeconds
	}
	return maxPodCertificateSeconds
}

// validateStubRequest: a signed PKCS#10 request for a key of the kinds
// pods may ask for.
func validateStubRequest(der []byte, path *field.Path) field.ErrorList {
	if len(der) > maxStubRequestBytes {
		return field.ErrorList{field.TooLong(path, "<value omitted>", maxStubRequestBytes)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(path, "<value omitted>", "must be a valid PKCS#10 CSR")}
	}
	if msg := checkPodKey(req.PublicKey); msg != "" {
		return field.ErrorList{field.Invalid(path, "<value omitted>", msg)}
	}
	if err := req.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(path, "<value omitted>", "invalid signature")}
	}
	return nil
}

// checkPodKey words why a public key is not one a pod may ask for.
func checkPodKey(key any) string {
	switch k := key.(type) {
	case ed25519.PublicKey:
		return ""
	case *ecdsa.PublicKey:
		if c := k.Curve; c != elliptic.P256() && c != elliptic.P384() && c != elliptic.P521() {
			return "elliptic public keys must use curve P256, P384, or P521"
		}
		return ""
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n != 3072 && n != 4096 {
			return "RSA keys must have modulus size 3072 or 4096"
		}
		return ""
	}
	return "unknown public key type; supported types are Ed25519, ECDSA, and RSA"
}

func (podCertificateRequestStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	r, prev := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
	return immutable(!apiequality.Semantic.DeepEqual(r.Spec, prev.Spec), field.NewPath("spec"), "<spec>")
}

// ValidateSubresourceUpdate checks what a signer writes to /status.
func (podCertificateRequestStrategy) ValidateSubresourceUpdate(_ string, obj, old runtime.Object) field.ErrorList {
	r, prev := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
	path := field.NewPath("status")
	errs := metav1validation.ValidateConditions(r.Status.Conditions, path.Child("conditions"))
	outcome, oerrs := podCertificateOutcome(r.Status.Conditions, path.Child("conditions"))
	errs = append(errs, oerrs...)
	if len(errs) > 0 {
		return errs
	}
	previous, _ := podCertificateOutcome(prev.Status.Conditions, nil)
	switch {
	case apiequality.Semantic.DeepEqual(r.Status, prev.Status):
		return nil
	case previous != "":
		return field.ErrorList{field.Forbidden(path, "immutable after PodCertificateRequest is issued, denied, or failed")}
	case outcome == "":
		return field.ErrorList{field.Forbidden(path, `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)}
	case outcome != certificatesv1.PodCertificateRequestConditionTypeIssued:
		st := r.Status
		if st.CertificateChain != "" || st.NotBefore != nil || st.NotAfter != nil || st.BeginRefreshAt != nil {
			return field.ErrorList{field.Forbidden(path, "non-condition status fields must be empty when denying or failing the PodCertificateRequest")}
		}
		return nil
	}
	return validateIssued(r, path)
}

// podCertificateOutcome is the request's Issued, Denied or Failed
// condition type, "" for none; there may be one at most, of status True,
// and no other types.
func podCertificateOutcome(conds []metav1.Condition, path *field.Path) (string, field.ErrorList) {
	var outcome string
	var errs field.ErrorList
	for i, c := range conds {
		p := path.Index(i)
		switch {
		case !slices.Contains(podCertificateOutcomes, c.Type):
			errs = append(errs, field.NotSupported(p.Child("type"), c.Type, podCertificateOutcomes))
		case outcome != "":
			errs = append(errs, field.Invalid(p.Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
		case c.Status != metav1.ConditionTrue:
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
		default:
			outcome = c.Type
		}
	}
	return outcome, errs
}

// validateIssued: the chain's leaf is for the requested key, its times are
// those of the status, it lives an hour at least and no longer than asked,
// and the refresh falls 10 minutes inside its life.
func validateIssued(r *certificatesv1.PodCertificateRequest, path *field.Path) field.ErrorList {
	st, chainPath := r.Status, path.Child("certificateChain")
	leaf, err := parseChain(st.CertificateChain)
	if err != nil {
		return field.ErrorList{field.Invalid(chainPath, "<value omitted>", err.Error())}
	}
	var errs field.ErrorList
	if req, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request); err == nil && !samePublicKey(req.PublicKey, leaf.PublicKey) {
		errs = append(errs, field.Invalid(chainPath, "<value omitted>", "leaf certificate was not issued to the requested public key"))
	}
	if st.NotBefore == nil || st.NotAfter == nil || st.BeginRefreshAt == nil {
		for name, t := range map[string]*metav1.Time{"notBefore": st.NotBefore, "notAfter": st.NotAfter, "beginRefreshAt": st.BeginRefreshAt} {
			if t == nil {
				errs = append(errs, field.Required(path.Child(name), "must be present and consistent with the issued certificate"))
			}
		}
		return errs
	}
	notBefore, notAfter, refresh := st.NotBefore.Time, st.NotAfter.Time, st.BeginRefreshAt.Time
	if !notBefore.Equal(leaf.NotBefore) {
		errs = append(errs, field.Invalid(path.Child("notBefore"), st.NotBefore, "must be set to the leaf certificate's NotBefore"))
	}
	if d := time.Since(notBefore); d > 5*time.Minute || d < -5*time.Minute {
		errs = append(errs, field.Invalid(path.Child("notBefore"), st.NotBefore, "must be set to within 5 minutes of kube-apiserver's current time"))
	}
	if !notAfter.Equal(leaf.NotAfter) {
		errs = append(errs, field.Invalid(path.Child("notAfter"), st.NotAfter, "must be set to the leaf certificate's NotAfter"))
	}
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	if life < time.Hour {
		errs = append(errs, field.Invalid(chainPath, "<value omitted>", "leaf certificate lifetime must be >= 1 hour"))
	}
	if max := time.Duration(*r.Spec.MaxExpirationSeconds) * time.Second; life > max {
		errs = append(errs, field.Invalid(chainPath, "<value omitted>", fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", max)))
	}
	if refresh.Before(notBefore.Add(10 * time.Minute)) {
		errs = append(errs, field.Invalid(path.Child("beginRefreshAt"), st.BeginRefreshAt, "must be at least 10 minutes after status.notBefore"))
	}
	if refresh.After(notAfter.Add(-10 * time.Minute)) {
		errs = append(errs, field.Invalid(path.Child("beginRefreshAt"), st.BeginRefreshAt, "must be at least 10 minutes before status.notAfter"))
	}
	return errs
}

// parseChain returns the leaf of a chain of PEM certificates.
func parseChain(chain string) (*x509.Certificate, error) {
	if len(chain) > maxCertificateChainBytes {
		return nil, fmt.Errorf("must be at most %d bytes", maxCertificateChainBytes)
	}
	var leaf *x509.Certificate
	rest := []byte(chain)
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("issued certificate chain must consist entirely of CERTIFICATE PEM blocks")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate of the chain does not parse: %v", err)
		}
		if leaf == nil {
			leaf = cert
		}
	}
	if leaf == nil {
		return nil, fmt.Errorf("issued certificate chain must contain at least one certificate")
	}
	return leaf, nil
}

// samePublicKey compares two public keys of the crypto package's kinds.
func samePublicKey(a, b any) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// Fields are kube-apiserver's for PodCertificateRequests.
func (podCertificateRequestStrategy) Fields(obj runtime.Object) fields.Set {
	r := obj.(*certificatesv1.PodCertificateRequest)
	return fields.Set{"spec.signerName": r.Spec.SignerName, "spec.podName": r.Spec.PodName, "spec.nodeName": string(r.Spec.NodeName)}
}

func (podCertificateRequestStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "PodName", Type: "string"}, {Name: "ServiceAccountName", Type: "string"},
		{Name: "NodeName", Type: "string"}, {Name: "SignerName", Type: "string"}, {Name: "State", Type: "string"}}
}

func (podCertificateRequestStrategy) Row(obj runtime.Object) []any {
	r := obj.(*certificatesv1.PodCertificateRequest)
	state, _ := podCertificateOutcome(r.Status.Conditions, nil)
	if state == "" {
		state = "Pending"
	}
	return []any{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state}
}

// keepsMetadataOnStatus: a signer's status update changes no metadata.
func (podCertificateRequestStrategy) keepsMetadataOnStatus() {}
