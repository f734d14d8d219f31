package registry

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const nodeRolePrefix = "node-role.kubernetes.io/"

// NodeStrategy is core/v1 Node.
type NodeStrategy struct{ BaseStrategy }

func (NodeStrategy) Validate(obj runtime.Object) field.ErrorList {
	node := obj.(*corev1.Node)
	path := field.NewPath("spec", "taints")
	var errs field.ErrorList
	for i, t := range node.Spec.Taints {
		if t.Key == "" {
			errs = append(errs, field.Required(path.Index(i).Child("key"), ""))
		}
		errs = append(errs, validateOneOf(t.Effect, path.Index(i).Child("effect"),
			corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)...)
	}
	return errs
}

// ValidateUpdate keeps a node's podCIDR once it is set.
func (NodeStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	node, oldNode := obj.(*corev1.Node), old.(*corev1.Node)
	if oldNode.Spec.PodCIDR == "" {
		return nil
	}
	return immutable(node.Spec.PodCIDR != oldNode.Spec.PodCIDR, field.NewPath("spec", "podCIDR"), node.Spec.PodCIDR)
}

func (NodeStrategy) PrepareForUpdate(obj, old runtime.Object) {
	node, oldNode := obj.(*corev1.Node), old.(*corev1.Node)
	if node.Spec.PodCIDR == "" {
		node.Spec.PodCIDR, node.Spec.PodCIDRs = oldNode.Spec.PodCIDR, oldNode.Spec.PodCIDRs
	}
}

func (NodeStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
}

func (NodeStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		column("Status", "string", "The status of the node."),
		column("Roles", "string", "The roles of the node."),
		ageColumn,
		column("Version", "string", "Kubelet Version reported by the node."),
		wideColumn("Internal-IP", "string", "List of internal IPs."),
		wideColumn("External-IP", "string", "List of external IPs."),
		wideColumn("OS-Image", "string", "OS image reported by the node."),
		wideColumn("Kernel-Version", "string", "Kernel version reported by the node."),
		wideColumn("Container-Runtime", "string", "Container runtime reported by the node."),
	}
}

func (NodeStrategy) Row(obj runtime.Object) []any {
	node := obj.(*corev1.Node)
	info := node.Status.NodeInfo
	return []any{node.Name, nodeStatus(node), nodeRoles(node), age(node.CreationTimestamp), info.KubeletVersion,
		NodeAddress(node, corev1.NodeInternalIP), NodeAddress(node, corev1.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion)}
}

func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

func nodeRoles(node *corev1.Node) string {
	roles := sets.New[string]()
	for k, v := range node.Labels {
		if role, ok := strings.CutPrefix(k, nodeRolePrefix); ok && role != "" {
			roles.Insert(role)
		} else if k == "kubernetes.io/role" && v != "" {
			roles.Insert(v)
		}
	}
	if roles.Len() == 0 {
		return "<none>"
	}
	list := sets.List(roles)
	sort.Strings(list)
	return strings.Join(list, ",")
}

// NodeAddress is the node's first address of type typ, or "<none>".
func NodeAddress(node *corev1.Node, typ corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
