package registry

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits kube-apiserver puts on an EndpointSlice.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 100
)

var (
	sliceAddressTypes = []string{string(discoveryv1.AddressTypeFQDN), string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6)}
	sliceProtocols    = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
)

type endpointSliceStrategy struct{ BaseStrategy }

// PrepareForCreate gives every port a name ("" when it has none) and the
// TCP protocol when it names none, as the v1 defaults do.
func (endpointSliceStrategy) PrepareForCreate(obj runtime.Object) {
	s := obj.(*discoveryv1.EndpointSlice)
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			p.Name = new("")
		}
		if p.Protocol == nil {
			p.Protocol = new(corev1.ProtocolTCP)
		}
	}
}

func (s endpointSliceStrategy) PrepareForUpdate(obj, _ runtime.Object) { s.PrepareForCreate(obj) }

// SpecChanged counts, as kube-apiserver does, a change of anything but
// metadata, or of the labels, as a new generation: the EndpointSlice
// controller relies on it to know whether its cache saw its last write.
func (endpointSliceStrategy) specChanged(obj, old runtime.Object) bool {
	s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	return s.AddressType != o.AddressType || !apiequality.Semantic.DeepEqual(s.Endpoints, o.Endpoints) ||
		!apiequality.Semantic.DeepEqual(s.Ports, o.Ports) || !maps.Equal(s.Labels, o.Labels)
}

func (endpointSliceStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*discoveryv1.EndpointSlice)
	var errs field.ErrorList
	switch path := field.NewPath("addressType"); {
	case s.AddressType == "":
		errs = append(errs, field.Required(path, ""))
	case !slices.Contains(sliceAddressTypes, string(s.AddressType)):
		errs = append(errs, field.NotSupported(path, s.AddressType, sliceAddressTypes))
	}
	errs = append(errs, validateSliceEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	return append(errs, validateSlicePorts(s.Ports, field.NewPath("ports"))...)
}

func (endpointSliceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	if s.AddressType != oldS.AddressType {
		return field.ErrorList{field.Invalid(field.NewPath("addressType"), s.AddressType, "field is immutable")}
	}
	return nil
}

func validateSliceEndpoints(endpoints []discoveryv1.Endpoint, typ discoveryv1.AddressType, path *field.Path) field.ErrorList {
	if len(endpoints) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(path, len(endpoints), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range endpoints {
		addrs := path.Index(i).Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(addrs, "must contain at least 1 address"))
		case len(ep.Addresses) > maxSliceAddresses:
			errs = append(errs, field.TooMany(addrs, len(ep.Addresses), maxSliceAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateSliceAddress(a, typ, addrs.Index(j))...)
		}
		if ep.Hostname != nil {
			errs = append(errs, validateDNSLabel(*ep.Hostname, path.Index(i).Child("hostname"))...)
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				errs = append(errs, field.Invalid(path.Index(i).Child("nodeName"), *ep.NodeName, msg))
			}
		}
	}
	return errs
}

func validateSliceAddress(a string, typ discoveryv1.AddressType, path *field.Path) field.ErrorList {
	switch typ {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIP(path, a); len(errs) > 0 {
			return errs
		}
		if isV4 := net.ParseIP(a).To4() != nil; isV4 != (typ == discoveryv1.AddressTypeIPv4) {
			return field.ErrorList{field.Invalid(path, a, "must be an "+string(typ)+" address")}
		}
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(path, a)
	}
	return nil
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, path *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(path, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ports {
		name := *p.Name // defaulted
		if name != "" {
			errs = append(errs, validateDNSLabel(name, path.Index(i).Child("name"))...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), name))
		}
		names[name] = true
		if !slices.Contains(sliceProtocols, string(*p.Protocol)) {
			errs = append(errs, field.NotSupported(path.Index(i).Child("protocol"), *p.Protocol, sliceProtocols))
		}
		if p.Port != nil {
			errs = append(errs, validatePortNumber(*p.Port, path.Index(i).Child("port"))...)
		}
	}
	return errs
}

func (endpointSliceStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		column("AddressType", "string", "The IP protocol family of the addresses."),
		column("Ports", "string", "The ports of the endpoints."),
		column("Endpoints", "string", "The first addresses of the endpoints."), ageColumn}
}

func (endpointSliceStrategy) Row(obj runtime.Object) []any {
	s := obj.(*discoveryv1.EndpointSlice)
	var ports, addrs []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	for _, ep := range s.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []any{s.Name, string(s.AddressType), firstThree(ports), firstThree(addrs), age(s.CreationTimestamp)}
}

// firstThree lists up to three items and counts the rest, or says <unset>,
// as kubectl's EndpointSlice columns do.
func firstThree(items []string) string {
	switch {
	case len(items) == 0:
		return "<unset>"
	case len(items) > 3:
		return fmt.Sprintf("%s + %d more...", strings.Join(items[:3], ","), len(items)-3)
	}
	return strings.Join(items, ",")
}
