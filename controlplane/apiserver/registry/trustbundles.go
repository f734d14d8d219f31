package registry

import (
	"crypto/x509"
	"encoding/pem"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ClusterTrustBundles publish CA certificates for workloads to trust, by
// name or by signer (pods project them into volumes).
type clusterTrustBundleStrategy struct{ BaseStrategy }

func (clusterTrustBundleStrategy) Validate(obj runtime.Object) field.ErrorList {
	b := obj.(*certificatesv1.ClusterTrustBundle)
	var errs field.ErrorList
	if b.Spec.SignerName != "" {
		errs = append(errs, validateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
		prefix := strings.ReplaceAll(b.Spec.SignerName, "/", ":") + ":"
		if !strings.HasPrefix(b.Name, prefix) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), b.Name,
				"ClusterTrustBundle for signerName "+b.Spec.SignerName+" must be named with prefix "+prefix))
		}
	} else if strings.Contains(b.Name, ":") {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), b.Name,
			"ClusterTrustBundle without signer name must not have \":\" in its name"))
	}
	return append(errs, validateTrustBundle(b.Spec.TrustBundle, field.NewPath("spec", "trustBundle"))...)
}

func (clusterTrustBundleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	b, prev := obj.(*certificatesv1.ClusterTrustBundle), old.(*certificatesv1.ClusterTrustBundle)
	return immutable(b.Spec.SignerName != prev.Spec.SignerName, field.NewPath("spec", "signerName"), b.Spec.SignerName)
}

// Fields are kube-apiserver's for ClusterTrustBundles.
func (clusterTrustBundleStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.signerName": obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
}

// trustBundleNames: a ClusterTrustBundle's name is a DNS subdomain after
// the prefix naming its signer ("example.com:signer:"), which validate
// checks against spec.signerName.
func trustBundleNames(name string, prefix bool) []string {
	if i := strings.LastIndex(name, ":"); i >= 0 {
		name = name[i+1:]
	}
	return apivalidation.NameIsDNSSubdomain(name, prefix)
}

// validateTrustBundle: one or more PEM CERTIFICATE blocks, each a CA
// certificate, and nothing else.
func validateTrustBundle(bundle string, path *field.Path) field.ErrorList {
	rest := []byte(bundle)
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return field.ErrorList{field.Invalid(path, "<value omitted>", "entry has bad block type: "+block.Type)}
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return field.ErrorList{field.Invalid(path, "<value omitted>", "entry cannot be parsed as an X.509 certificate: "+err.Error())}
		}
		if !cert.IsCA {
			return field.ErrorList{field.Invalid(path, "<value omitted>", "entry is not a CA certificate")}
		}
		n++
	}
	if n == 0 || strings.TrimSpace(string(rest)) != "" {
		return field.ErrorList{field.Invalid(path, "<value omitted>", "contained no PEM certificates, or data that is not PEM")}
	}
	return nil
}
