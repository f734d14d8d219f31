package agent

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// safeSysctls are the kubelet's safe sysctls (pkg/kubelet/sysctl): each is
// namespaced, so setting it in a pod affects no other pod, and is allowed
// without node configuration. Each maps to the namespace it lives in. The
// kernels skiff supports have them all (the newest came in 4.15).
var safeSysctls = map[string]string{
	"kernel.shm_rmid_forced":              "ipc",
	"net.ipv4.ip_local_port_range":        "net",
	"net.ipv4.tcp_syncookies":             "net",
	"net.ipv4.ping_group_range":           "net",
	"net.ipv4.ip_unprivileged_port_start": "net",
	"net.ipv4.ip_local_reserved_ports":    "net",
	"net.ipv4.tcp_keepalive_time":         "net",
	"net.ipv4.tcp_fin_timeout":            "net",
	"net.ipv4.tcp_keepalive_intvl":        "net",
	"net.ipv4.tcp_keepalive_probes":       "net",
	"net.ipv4.tcp_rmem":                   "net",
	"net.ipv4.tcp_wmem":                   "net",
}

// reasonSysctlForbidden is the kubelet's reason for a pod refused for its
// sysctls.
const reasonSysctlForbidden = "SysctlForbidden"

// podSysctls returns the pod's sysctls by their dotted names, or, in the
// kubelet's words, why the node refuses them: a name not on the safe list,
// or one in a namespace the pod shares with the node (net.* with
// hostNetwork, kernel.shm* with hostIPC). It does no I/O.
func podSysctls(pod *v1.Pod) (map[string]string, error) {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(sc.Sysctls))
	for _, s := range sc.Sysctls {
		name := dottedSysctl(s.Name)
		ns, ok := safeSysctls[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("forbidden sysctl: %q not allowlisted", name)
		case ns == "net" && pod.Spec.HostNetwork, ns == "ipc" && pod.Spec.HostIPC:
			return nil, fmt.Errorf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
		out[name] = s.Value
	}
	return out, nil
}

// dottedSysctl turns a sysctl written with slashes (net/ipv4/tcp_syncookies,
// net/ipv4/conf/eth0.100/rp_filter) into its dotted name, as the kubelet
// does: when the first separator is a slash, dots and slashes swap.
func dottedSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}

// rejection is why the node refuses to run a pod at all.
type rejection struct{ Reason, Message string }

// reasonNodePorts is the kubelet's reason for a pod refused because
// another pod of the node holds one of its host ports.
const reasonNodePorts = "NodePorts"

// admit decides, as the kubelet's admission does before it starts anything
// of a pod, whether this node runs it beside others (the node's other
// pods): nil, or why not. It does no I/O.
func admit(pod *v1.Pod, others []*v1.Pod) *rejection {
	if _, err := podSysctls(pod); err != nil {
		return &rejection{Reason: reasonSysctlForbidden, Message: err.Error()}
	}
	for _, o := range others {
		if admittedBefore(o, pod) && sharesHostPort(o, pod) {
			return &rejection{Reason: reasonNodePorts,
				Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
		}
	}
	return nil
}

// admittedBefore reports whether other, a pod of the same node, holds its
// resources ahead of pod: it has not ended and came first (by creation,
// then name), so that of two pods that conflict exactly one is refused.
func admittedBefore(other, pod *v1.Pod) bool {
	if other.UID == pod.UID || other.Status.Phase == v1.PodFailed || other.Status.Phase == v1.PodSucceeded {
		return false
	}
	if !other.CreationTimestamp.Equal(&pod.CreationTimestamp) {
		return other.CreationTimestamp.Before(&pod.CreationTimestamp)
	}
	return other.Namespace+"/"+other.Name < pod.Namespace+"/"+pod.Name
}

// sharesHostPort reports whether two pods ask for the same host port and
// protocol on addresses that overlap (an empty or unspecified address is
// every address).
func sharesHostPort(a, b *v1.Pod) bool {
	for _, pa := range hostPorts(a) {
		for _, pb := range hostPorts(b) {
			if pa.HostPort == pb.HostPort && pa.Protocol == pb.Protocol && hostIPsOverlap(pa.HostIP, pb.HostIP) {
				return true
			}
		}
	}
	return false
}

func hostIPsOverlap(a, b string) bool {
	wildcard := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return wildcard(a) || wildcard(b) || a == b
}

// reject reports a pod the node will not run, as the kubelet does: a
// Warning event with the reason, and the pod Failed with the reason and
// "Pod was rejected: <message>". Nothing of the pod is created. A pod
// already rejected for that reason is left as it is, so rejecting on every
// sync sends one event.
func (s *podSync) reject(ctx context.Context, r rejection) error {
	if s.pod.Status.Phase == v1.PodFailed && s.pod.Status.Reason == r.Reason {
		return nil
	}
	s.event(v1.EventTypeWarning, r.Reason, r.Message)
	update := s.pod.DeepCopy()
	update.Status.Phase, update.Status.Reason = v1.PodFailed, r.Reason
	update.Status.Message = "Pod was rejected: " + r.Message
	_, err := s.a.client.CoreV1().Pods(s.pod.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reject pod: %w", err)
	}
	return nil
}
