package registry

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// ServiceStrategy defaults and validates Services; its allocator hands out
// ClusterIPs and NodePorts.
type ServiceStrategy struct {
	BaseStrategy
	*ServiceAllocator
}

// Fields are kube-apiserver's for Services: upstream kube-proxy lists
// them with spec.clusterIP!=None.
func (ServiceStrategy) Fields(obj runtime.Object) fields.Set {
	svc := obj.(*corev1.Service)
	return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
}

var _ Allocator = ServiceStrategy{}

func (ServiceStrategy) PrepareForCreate(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	defaultService(svc)
	svc.Status = corev1.ServiceStatus{}
}

func defaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	if spec.InternalTrafficPolicy == nil {
		spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if needsNodePorts(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if spec.IPFamilyPolicy == nil {
		spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	}
}

func (s ServiceStrategy) Validate(obj runtime.Object) field.ErrorList {
	svc := obj.(*corev1.Service)
	path := field.NewPath("spec")
	errs := s.validateNodePorts(svc)
	errs = append(errs, validateOneOf(svc.Spec.Type, path.Child("type"), corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)...)
	errs = append(errs, validateOneOf(svc.Spec.SessionAffinity, path.Child("sessionAffinity"), corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP)...)
	errs = append(errs, validateLabels(svc.Spec.Selector, path.Child("selector"))...)
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if svc.Spec.ExternalName == "" {
			errs = append(errs, field.Required(path.Child("externalName"), ""))
		}
		return errs
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone && net.ParseIP(ip) == nil {
		errs = append(errs, field.Invalid(path.Child("clusterIPs").Index(0), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
	}
	if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		errs = append(errs, field.Required(path.Child("ports"), ""))
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone && needsNodePorts(svc) {
		errs = append(errs, field.Invalid(path.Child("clusterIPs").Index(0), corev1.ClusterIPNone, "may not be set to 'None' for "+string(svc.Spec.Type)+" services"))
	}
	return append(errs, validateServicePorts(svc, path.Child("ports"))...)
}

func validateServicePorts(svc *corev1.Service, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range svc.Spec.Ports {
		ip := path.Index(i)
		if len(svc.Spec.Ports) > 1 && p.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		}
		if p.Name != "" {
			errs = append(errs, validateDNSLabel(p.Name, ip.Child("name"))...)
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		errs = append(errs, validatePortNumber(p.Port, ip.Child("port"))...)
		errs = append(errs, validateOneOf(p.Protocol, ip.Child("protocol"), corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)...)
		if p.TargetPort.Type == intstr.Int {
			errs = append(errs, validatePortNumber(p.TargetPort.IntVal, ip.Child("targetPort"))...)
		} else {
			errs = append(errs, validatePortName(p.TargetPort.StrVal, ip.Child("targetPort"))...)
		}
		if p.NodePort != 0 && !needsNodePorts(svc) {
			errs = append(errs, field.Forbidden(ip.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
		}
	}
	return errs
}

// validateNodePorts checks NodePorts against the configured range.
func (s ServiceStrategy) validateNodePorts(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	for i, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !s.ports.contains(p.NodePort) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort,
				"provided port is not in the valid range. The range of valid ports is "+s.ports.String()))
		}
	}
	return errs
}

func (s ServiceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	dropTypeDependentFields(svc, oldSvc)
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 && needsClusterIP(svc) {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = oldSvc.Spec.ClusterIP, oldSvc.Spec.ClusterIPs
	}
	defaultService(svc)
	// NodePorts left empty on update keep the ones already allocated.
	for i := range svc.Spec.Ports {
		for _, op := range oldSvc.Spec.Ports {
			if svc.Spec.Ports[i].NodePort == 0 && needsNodePorts(svc) && op.Port == svc.Spec.Ports[i].Port && op.Protocol == svc.Spec.Ports[i].Protocol {
				svc.Spec.Ports[i].NodePort = op.NodePort
			}
		}
	}
}

// dropTypeDependentFields clears, as kube-apiserver does, what the old
// type needed and the new one does not, where the update left it as it
// was: the cluster IPs and IP families of a service that becomes
// ExternalName (the allocator then releases the IP), the node ports of
// one that is no longer NodePort or LoadBalancer, and the external
// traffic policy of one no longer reachable from outside.
func dropTypeDependentFields(svc, old *corev1.Service) {
	spec, was := &svc.Spec, old.Spec
	if was.Type != corev1.ServiceTypeExternalName && spec.Type == corev1.ServiceTypeExternalName {
		if spec.ClusterIP == was.ClusterIP && slices.Equal(spec.ClusterIPs, was.ClusterIPs) {
			spec.ClusterIP, spec.ClusterIPs = "", nil
		}
		if slices.Equal(spec.IPFamilies, was.IPFamilies) {
			spec.IPFamilies = nil
		}
		if equalPtr(spec.IPFamilyPolicy, was.IPFamilyPolicy) {
			spec.IPFamilyPolicy = nil
		}
	}
	samePorts := slices.EqualFunc(spec.Ports, was.Ports, func(a, b corev1.ServicePort) bool { return a.NodePort == b.NodePort })
	if needsNodePorts(old) && !needsNodePorts(svc) && samePorts {
		for i := range spec.Ports {
			spec.Ports[i].NodePort = 0
		}
	}
	if externallyReachable(old) && !externallyReachable(svc) && spec.ExternalTrafficPolicy == was.ExternalTrafficPolicy {
		spec.ExternalTrafficPolicy = ""
	}
}

func equalPtr[T comparable](a, b *T) bool { return a == b || a != nil && b != nil && *a == *b }

// externallyReachable: node ports or external IPs lead to it.
func externallyReachable(svc *corev1.Service) bool {
	return needsNodePorts(svc) || svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0
}

func (s ServiceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	var errs field.ErrorList
	if needsClusterIP(oldSvc) && needsClusterIP(svc) {
		errs = append(errs, immutable(svc.Spec.ClusterIP != oldSvc.Spec.ClusterIP, field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIP)...)
	}
	return errs
}

func (ServiceStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		column("Type", "string", "The type of the service."),
		column("Cluster-IP", "string", "The IP of the service inside the cluster."),
		column("External-IP", "string", "The external IPs of the service."),
		column("Port(s)", "string", "The ports the service exposes."),
		ageColumn,
		wideColumn("Selector", "string", "The label selector of the service's pods."),
	}
}

func (ServiceStrategy) Row(obj runtime.Object) []any {
	svc := obj.(*corev1.Service)
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	} else if svc.Spec.ClusterIP != "" {
		clusterIP = svc.Spec.ClusterIP
	}
	return []any{svc.Name, string(svc.Spec.Type), clusterIP, externalIPs(svc), servicePorts(svc.Spec.Ports),
		age(svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector)}
}

func externalIPs(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		seen := sets.New[string]()
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				seen.Insert(in.IP)
			} else if in.Hostname != "" {
				seen.Insert(in.Hostname)
			}
		}
		all := append(sets.List(seen), svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	}
	return "<unknown>"
}

func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			out[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(out, ",")
}
