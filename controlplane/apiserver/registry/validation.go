package registry

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var metadataPath = field.NewPath("metadata")

// dnsLabelNames are the resources whose names must be DNS-1123 labels (the
// rest take DNS-1123 subdomains).
var dnsLabelNames = map[string]bool{"namespaces": true, "services": true}

// NameValidator is the rule that the names of res's objects follow.
func NameValidator(res *Resource) apivalidation.ValidateNameFunc {
	if res.GVK.Group == rbacv1.GroupName {
		return rbacNames
	}
	switch res.Plural {
	case "clustertrustbundles":
		return trustBundleNames
	case "ipaddresses":
		return ipAddressNames
	}
	if dnsLabelNames[res.Plural] {
		return apivalidation.NameIsDNSLabel
	}
	return apivalidation.NameIsDNSSubdomain
}

// ValidateObjectMeta checks the metadata of a new object as
// kube-apiserver does, with name checking its name.
func ValidateObjectMeta(m *metav1.ObjectMeta, namespaced bool, name apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMeta(m, namespaced, name, metadataPath)
}

// ValidateObjectMetaUpdate checks what an update changes in metadata.
func ValidateObjectMetaUpdate(m, old *metav1.ObjectMeta) field.ErrorList {
	return apivalidation.ValidateObjectMetaUpdate(m, old, metadataPath)
}

// validateLabelSelector checks a selector's syntax.
func validateLabelSelector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	return metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, path)
}

func validateLabels(l map[string]string, path *field.Path) field.ErrorList {
	return metavalidation.ValidateLabels(l, path)
}

// invalidFor is one Invalid error for each of an apimachinery validation
// function's messages about v.
func invalidFor(path *field.Path, v any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

func validateDNSLabel(v string, path *field.Path) field.ErrorList {
	return invalidFor(path, v, validation.IsDNS1123Label(v))
}

func validatePortNumber(port int32, path *field.Path) field.ErrorList {
	return invalidFor(path, port, validation.IsValidPortNum(int(port)))
}

func validatePortName(name string, path *field.Path) field.ErrorList {
	return invalidFor(path, name, validation.IsValidPortName(name))
}

func validateNonNegative(v int64, path *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(path, v, "must be greater than or equal to 0")}
	}
	return nil
}

// validateOneOf checks that v is one of allowed; an empty v is Required.
func validateOneOf[T ~string](v T, path *field.Path, allowed ...T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return field.ErrorList{field.NotSupported(path, v, names)}
}

func immutable(changed bool, path *field.Path, v any) field.ErrorList {
	if changed {
		return field.ErrorList{field.Invalid(path, fmt.Sprint(v), "field is immutable")}
	}
	return nil
}
