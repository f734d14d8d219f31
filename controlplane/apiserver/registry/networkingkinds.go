package registry

import (
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Ingresses and IngressClasses are served as API objects for an ingress
// controller to act on; skiff runs none of its own.

type ingressClassStrategy struct{ BaseStrategy }

func (ingressClassStrategy) Validate(obj runtime.Object) field.ErrorList {
	c := obj.(*networkingv1.IngressClass)
	path := field.NewPath("spec", "controller")
	if c.Spec.Controller == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if len(c.Spec.Controller) > 250 {
		return field.ErrorList{field.TooLong(path, "", 250)}
	}
	return nil
}

func (ingressClassStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	c, prev := obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
	return immutable(c.Spec.Controller != prev.Spec.Controller, field.NewPath("spec", "controller"), c.Spec.Controller)
}

func (ingressClassStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Controller", "string", "The controller of the class."), ageColumn}
}

func (ingressClassStrategy) Row(obj runtime.Object) []any {
	c := obj.(*networkingv1.IngressClass)
	return []any{c.Name, c.Spec.Controller, age(c.CreationTimestamp)}
}

type ingressStrategy struct{ BaseStrategy }

func (ingressStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*networkingv1.Ingress).Status = networkingv1.IngressStatus{}
}

func (ingressStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*networkingv1.Ingress).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if s.DefaultBackend == nil && len(s.Rules) == 0 {
		errs = append(errs, field.Invalid(path, s, "either `defaultBackend` or `rules` must be specified"))
	}
	if s.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(s.DefaultBackend, path.Child("defaultBackend"))...)
	}
	for i, r := range s.Rules {
		rp := path.Child("rules").Index(i)
		if r.Host != "" {
			errs = append(errs, validateDNSSubdomain(strings.TrimPrefix(r.Host, "*."), rp.Child("host"))...)
		}
		if r.HTTP == nil {
			continue
		}
		for j, p := range r.HTTP.Paths {
			pp := rp.Child("http", "paths").Index(j)
			if p.PathType == nil {
				errs = append(errs, field.Required(pp.Child("pathType"), "pathType must be specified"))
			} else {
				errs = append(errs, validateOneOf(*p.PathType, pp.Child("pathType"), networkingv1.PathTypeExact,
					networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific)...)
				if *p.PathType != networkingv1.PathTypeImplementationSpecific && !strings.HasPrefix(p.Path, "/") {
					errs = append(errs, field.Invalid(pp.Child("path"), p.Path, "must be an absolute path"))
				}
			}
			errs = append(errs, validateIngressBackend(&p.Backend, pp.Child("backend"))...)
		}
	}
	for i, t := range s.TLS {
		for j, h := range t.Hosts {
			errs = append(errs, validateDNSSubdomain(strings.TrimPrefix(h, "*."), path.Child("tls").Index(i).Child("hosts").Index(j))...)
		}
	}
	return errs
}

// validateIngressBackend: a Service (with a port by name or number) or a
// Resource, not both.
func validateIngressBackend(b *networkingv1.IngressBackend, path *field.Path) field.ErrorList {
	switch {
	case b.Service != nil && b.Resource != nil:
		return field.ErrorList{field.Invalid(path, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		if b.Resource.Kind == "" || b.Resource.Name == "" {
			return field.ErrorList{field.Required(path.Child("resource"), "kind and name are required")}
		}
		return nil
	case b.Service == nil:
		return field.ErrorList{field.Invalid(path, "", "resource or service backend is required")}
	}
	errs := validateDNSLabel(b.Service.Name, path.Child("service", "name"))
	port := b.Service.Port
	switch {
	case port.Name != "" && port.Number != 0:
		errs = append(errs, field.Invalid(path.Child("service", "port"), port, "cannot set both port name & port number"))
	case port.Name != "":
		errs = append(errs, validatePortName(port.Name, path.Child("service", "port", "name"))...)
	default:
		errs = append(errs, validatePortNumber(port.Number, path.Child("service", "port", "number"))...)
	}
	return errs
}

func (ingressStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Class", "string", "The ingress class."),
		column("Hosts", "string", "The hosts of its rules."), column("Address", "string", "Where it is served."),
		column("Ports", "string", "The ports it is served on."), ageColumn}
}

func (ingressStrategy) Row(obj runtime.Object) []any {
	in := obj.(*networkingv1.Ingress)
	class := "<none>"
	if in.Spec.IngressClassName != nil {
		class = *in.Spec.IngressClassName
	}
	var hosts, addrs []string
	for _, r := range in.Spec.Rules {
		hosts = append(hosts, r.Host)
	}
	for _, lb := range in.Status.LoadBalancer.Ingress {
		addrs = append(addrs, lb.IP+lb.Hostname)
	}
	ports := "80"
	if len(in.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	host := strings.Join(hosts, ",")
	if host == "" {
		host = "*"
	}
	return []any{in.Name, class, host, strings.Join(addrs, ","), ports, age(in.CreationTimestamp)}
}
