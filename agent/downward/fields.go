// Package downward computes Downward API values the way the kubelet does:
// pod fields (FieldValue) and container resources (ResourceValue), as they
// appear in environment variables and downwardAPI volume files.
//
// Everything here is pure: the pod and whatever the agent knows that the
// pod's status may not show yet (IPs, node allocatable) are passed in.
package downward

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrUnsupportedField is wrapped by FieldValue's error for a field path it
// does not serve; the message reads "unsupported fieldPath: <path>".
var ErrUnsupportedField = errors.New("unsupported fieldPath")

// IPs are the addresses the agent knows before it writes the pod's status.
// Each list is ordered primary first, as the pod's status lists them (the
// kubelet puts the node's preferred IP family first). A nil list means
// "not known here": FieldValue then reads the pod's status; an empty
// non-nil list means there are none.
type IPs struct {
	Pod  []string // the pod's IPs (the sandbox's, from CNI)
	Host []string // the node's IPs
}

// FieldValue returns the value of a pod field selected by fieldPath, as the
// kubelet renders it:
//
//   - metadata.name, metadata.namespace, metadata.uid
//   - metadata.labels and metadata.annotations: the whole map, one
//     key="quoted value" line per entry, sorted by key, no trailing newline
//   - metadata.labels['k'] and metadata.annotations['k']: one value, empty
//     when absent; k must be a valid label/annotation key
//   - spec.nodeName (also as its old name spec.host), spec.serviceAccountName
//   - status.podIP, status.podIPs (comma-joined), from ips.Pod when set
//   - status.hostIP, status.hostIPs (comma-joined), from ips.Host when set;
//     an error when no host IP is known, since the kubelet fails then too
//
// Any other path returns an error wrapping ErrUnsupportedField.
func FieldValue(pod *v1.Pod, fieldPath string, ips IPs) (string, error) {
	if path, key, ok := splitSubscript(fieldPath); ok {
		return subscriptValue(pod, fieldPath, path, key)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName", "spec.host":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return ipValue(fieldPath, ips.podIPs(pod), false)
	case "status.hostIP", "status.hostIPs":
		return ipValue(fieldPath, ips.hostIPs(pod), true)
	}
	return "", fmt.Errorf("%w: %s", ErrUnsupportedField, fieldPath)
}

// splitSubscript splits "path['key']" into path and key. Keys may contain
// brackets and quotes; only the first "['" and the final "']" delimit.
func splitSubscript(fieldPath string) (path, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	path, key, found = strings.Cut(s, "['")
	if !found || path == "" {
		return "", "", false
	}
	return path, key, true
}

// subscriptValue serves metadata.labels['k'] and metadata.annotations['k'].
// Annotation keys are checked case-insensitively, as the API allows
// upper-case annotation keys.
func subscriptValue(pod *v1.Pod, fieldPath, path, key string) (string, error) {
	var m map[string]string
	check := key
	switch path {
	case "metadata.labels":
		m = pod.Labels
	case "metadata.annotations":
		m, check = pod.Annotations, strings.ToLower(key)
	default:
		return "", fmt.Errorf("%w: %s", ErrUnsupportedField, fieldPath)
	}
	if errs := validation.IsQualifiedName(check); len(errs) != 0 {
		return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
	}
	return m[key], nil
}

// formatMap renders a map as sorted key="value" lines, the value quoted and
// escaped as Go's %q does.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// podIPs are ips.Pod, or the pod's status IPs when ips.Pod is nil.
func (ips IPs) podIPs(pod *v1.Pod) []string {
	if ips.Pod != nil {
		return ips.Pod
	}
	out := make([]string, 0, len(pod.Status.PodIPs))
	for _, ip := range pod.Status.PodIPs {
		out = append(out, ip.IP)
	}
	return out
}

// hostIPs are ips.Host, or the pod's status host IPs when ips.Host is nil.
func (ips IPs) hostIPs(pod *v1.Pod) []string {
	if ips.Host != nil {
		return ips.Host
	}
	out := make([]string, 0, len(pod.Status.HostIPs))
	for _, ip := range pod.Status.HostIPs {
		out = append(out, ip.IP)
	}
	return out
}

// ipValue renders the first IP (the singular fields) or all of them
// comma-joined (the plural fields, which end in "s"). An empty list is ""
// unless required.
func ipValue(fieldPath string, ips []string, required bool) (string, error) {
	if len(ips) == 0 {
		if required {
			return "", fmt.Errorf("%s: no host IP known", fieldPath)
		}
		return "", nil
	}
	if strings.HasSuffix(fieldPath, "IPs") {
		return strings.Join(ips, ","), nil
	}
	return ips[0], nil
}
