package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints maps a node condition in a given status to the NoSchedule
// taint the controller keeps on the node while the condition holds, as
// kube-controller-manager's TaintNodeByCondition does.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
}

// managed reports whether the controller owns taint: the condition
// taints above (NoSchedule), unschedulable (NoSchedule), and not-ready and
// unreachable with NoExecute. Taints the controller does not own are never
// touched.
func managed(t corev1.Taint) bool {
	switch t.Effect {
	case corev1.TaintEffectNoExecute:
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	case corev1.TaintEffectNoSchedule:
		if t.Key == corev1.TaintNodeUnschedulable {
			return true
		}
		for _, byStatus := range conditionTaints {
			for _, key := range byStatus {
				if key == t.Key {
					return true
				}
			}
		}
	}
	return false
}

// desiredTaints are the taints the controller wants on node: a NoSchedule
// taint per condition in conditionTaints and for spec.unschedulable, and
// the NoExecute taint that makes pods leave a node that is not ready
// (Ready=False) or unreachable (Ready=Unknown). The two NoExecute taints
// exclude each other. A node that has not posted a Ready condition yet
// gets neither: it has its startup grace period, after which the
// controller writes Ready=Unknown itself.
func desiredTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, c := range node.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok {
			out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		out = append(out, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	ready := readyCondition(node)
	if ready == nil {
		return out
	}
	switch ready.Status {
	case corev1.ConditionFalse:
		out = append(out, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	case corev1.ConditionUnknown:
		out = append(out, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
	}
	return out
}

// reconcileTaints returns current with the managed taints made equal to
// desired: managed taints not desired are removed, desired ones missing
// are added (NoExecute ones with timeAdded now), and taints already there
// are kept as they are, timeAdded included, because the eviction deadline
// of the pods on the node counts from it. Unmanaged taints stay in place.
// changed reports whether the result differs from current.
func reconcileTaints(current, desired []corev1.Taint, now time.Time) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	changed := false
	for _, t := range current {
		if managed(t) && !containsTaint(desired, t) {
			changed = true
			continue
		}
		out = append(out, t)
	}
	for _, t := range desired {
		if containsTaint(current, t) {
			continue
		}
		if t.Effect == corev1.TaintEffectNoExecute {
			ts := metav1.NewTime(now)
			t.TimeAdded = &ts
		}
		out = append(out, t)
		changed = true
	}
	return out, changed
}

// containsTaint reports whether taints has one with t's key and effect.
func containsTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, c := range taints {
		if c.Key == t.Key && c.Effect == t.Effect {
			return true
		}
	}
	return false
}
