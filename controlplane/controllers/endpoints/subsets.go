package endpoints

import (
	"cmp"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// subsetsFor computes the subsets of svc's Endpoints from pods, the pods
// its selector matched. A pod counts when it has an IP, is not terminal and
// is not being deleted (unless svc publishes not-ready addresses); it is
// ready when its Ready condition is True or svc publishes not-ready
// addresses. Each service port resolves its targetPort per pod; a pod
// lacking a named port is left out of that port only. A headless service
// without ports lists its pods without ports; any other service without
// ports gets no subsets. The result is packed and sorted (see repack).
func subsetsFor(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	publishNotReady := svc.Spec.PublishNotReadyAddresses
	var entries []entry
	for _, pod := range pods {
		if !inEndpoints(pod, publishNotReady) {
			continue
		}
		addr, ok := addressFor(svc, pod)
		if !ok {
			continue
		}
		ready := publishNotReady || podReady(pod)
		if len(svc.Spec.Ports) == 0 {
			if !clusterIPSet(svc) {
				entries = append(entries, entry{addr: addr, ready: ready})
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			num, ok := targetPort(pod, sp)
			if !ok {
				continue
			}
			port := corev1.EndpointPort{Name: sp.Name, Port: num, Protocol: protocol(sp.Protocol), AppProtocol: sp.AppProtocol}
			entries = append(entries, entry{addr: addr, ready: ready, port: &port})
		}
	}
	return repack(entries)
}

// inEndpoints reports whether pod belongs in Endpoints at all: it has an
// IP, has not finished, and is not being deleted unless includeTerminating.
func inEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if len(podIPs(pod)) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podIPs returns the pod's IPs; status.podIPs when set, else status.podIP.
func podIPs(pod *corev1.Pod) []string {
	var ips []string
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = append(ips, pod.Status.PodIP)
	}
	return ips
}

// addressFor returns pod's address for svc: the pod's first IP of the
// service's (first) IP family, the node it runs on, a reference to the pod,
// and its hostname when the pod names svc as its subdomain.
func addressFor(svc *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	ips := podIPs(pod)
	want6 := isIPv6(ips[0])
	if len(svc.Spec.IPFamilies) > 0 {
		want6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	} else if clusterIPSet(svc) {
		want6 = isIPv6(svc.Spec.ClusterIP)
	}
	addr := corev1.EndpointAddress{
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil && isIPv6(ip) == want6 {
			addr.IP = a.String()
			break
		}
	}
	if addr.IP == "" {
		return corev1.EndpointAddress{}, false
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		addr.NodeName = &node
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		addr.Hostname = pod.Spec.Hostname
	}
	return addr, true
}

func isIPv6(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Is6() && !a.Is4In6()
}

// clusterIPSet reports whether svc has a cluster IP (is not headless).
func clusterIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// targetPort resolves sp's targetPort on pod: a number as it is (zero
// meaning the service port, as the API server defaults it), a name looked
// up among the ports of the pod's containers and sidecar init containers
// with the same name and protocol.
func targetPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	if sp.TargetPort.Type == intstr.Int {
		if sp.TargetPort.IntVal == 0 {
			return sp.Port, true
		}
		return sp.TargetPort.IntVal, true
	}
	name, proto := sp.TargetPort.StrVal, protocol(sp.Protocol)
	for _, c := range containersWithPorts(pod) {
		for _, p := range c.Ports {
			if p.Name == name && protocol(p.Protocol) == proto {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// containersWithPorts returns the containers whose ports serve traffic: the
// main containers and the sidecars (init containers that keep running).
func containersWithPorts(pod *corev1.Pod) []corev1.Container {
	out := append([]corev1.Container(nil), pod.Spec.Containers...)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

// protocol defaults an empty protocol to TCP, as the API server does.
func protocol(p corev1.Protocol) corev1.Protocol { return cmp.Or(p, corev1.ProtocolTCP) }
