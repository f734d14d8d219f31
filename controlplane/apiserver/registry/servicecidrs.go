package registry

import (
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ServiceCIDRs and IPAddresses (networking.k8s.io/v1) are served as
// kube-apiserver serves them. skiff allocates ClusterIPs from the one
// range it is started with (--service-cidr), published as the default
// ServiceCIDR "kubernetes"; further ServiceCIDRs and IPAddresses are
// stored and validated for tools that read them.

// DefaultServiceCIDRName is the ServiceCIDR of the server's own range.
const DefaultServiceCIDRName = "kubernetes"

type serviceCIDRStrategy struct{ BaseStrategy }

func (serviceCIDRStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{}
}

func (serviceCIDRStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateServiceCIDRs(obj.(*networkingv1.ServiceCIDR).Spec.CIDRs, field.NewPath("spec", "cidrs"))
}

// validateServiceCIDRs: one or two CIDRs, one per IP family.
func validateServiceCIDRs(cidrs []string, path *field.Path) field.ErrorList {
	switch {
	case len(cidrs) == 0:
		return field.ErrorList{field.Required(path, "at least one CIDR required")}
	case len(cidrs) > 2:
		return field.ErrorList{field.Invalid(path, cidrs, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(path.Index(i), c)...)
	}
	if len(errs) == 0 && len(cidrs) == 2 && isIPv6CIDR(cidrs[0]) == isIPv6CIDR(cidrs[1]) {
		errs = append(errs, field.Invalid(path, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
	}
	return errs
}

func isIPv6CIDR(cidr string) bool { return strings.Contains(cidr, ":") }

// ValidateUpdate: the CIDRs are immutable, but for a single-family range
// gaining its other family.
func (serviceCIDRStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cidrs, prev := obj.(*networkingv1.ServiceCIDR).Spec.CIDRs, old.(*networkingv1.ServiceCIDR).Spec.CIDRs
	path := field.NewPath("spec", "cidrs")
	switch {
	case len(cidrs) == len(prev):
		var errs field.ErrorList
		for i := range prev {
			errs = append(errs, immutable(cidrs[i] != prev[i], path.Index(i), cidrs[i])...)
		}
		return errs
	case len(prev) == 1 && len(cidrs) == 2:
		return immutable(cidrs[0] != prev[0], path.Index(0), cidrs[0])
	}
	return immutable(true, path, cidrs)
}

func (serviceCIDRStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("CIDRs", "string", "The ranges of the ServiceCIDR."), ageColumn}
}

func (serviceCIDRStrategy) Row(obj runtime.Object) []any {
	c := obj.(*networkingv1.ServiceCIDR)
	return []any{c.Name, strings.Join(c.Spec.CIDRs, ","), age(c.CreationTimestamp)}
}

type ipAddressStrategy struct{ BaseStrategy }

// ipAddressNames: an IPAddress is named by its address, in canonical form.
func ipAddressNames(name string, _ bool) []string {
	var msgs []string
	for _, err := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, err.Detail)
	}
	return msgs
}

func (ipAddressStrategy) Validate(obj runtime.Object) field.ErrorList {
	ref := obj.(*networkingv1.IPAddress).Spec.ParentRef
	path := field.NewPath("spec", "parentRef")
	if ref == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		errs = append(errs, validateDNSSubdomain(ref.Group, path.Child("group"))...)
	}
	errs = append(errs, pathSegment(ref.Resource, true, path.Child("resource"))...)
	errs = append(errs, pathSegment(ref.Name, true, path.Child("name"))...)
	return append(errs, pathSegment(ref.Namespace, false, path.Child("namespace"))...)
}

// pathSegment checks a name that ends up in an API path.
func pathSegment(v string, required bool, path *field.Path) field.ErrorList {
	if v == "" {
		if required {
			return field.ErrorList{field.Required(path, "")}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range pathvalidation.IsValidPathSegmentName(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

func (ipAddressStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	ref, prev := obj.(*networkingv1.IPAddress).Spec.ParentRef, old.(*networkingv1.IPAddress).Spec.ParentRef
	changed := (ref == nil) != (prev == nil) || (ref != nil && *ref != *prev)
	return immutable(changed, field.NewPath("spec", "parentRef"), ref)
}

func (ipAddressStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("ParentRef", "string", "What holds the address."), ageColumn}
}

func (ipAddressStrategy) Row(obj runtime.Object) []any {
	ip := obj.(*networkingv1.IPAddress)
	ref := "<none>"
	if r := ip.Spec.ParentRef; r != nil {
		ref = r.Resource + "/" + r.Namespace + "/" + r.Name
		if r.Group != "" {
			ref = r.Resource + "." + r.Group + "/" + r.Namespace + "/" + r.Name
		}
	}
	return []any{ip.Name, ref, age(ip.CreationTimestamp)}
}
