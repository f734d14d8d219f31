// Package disruptionbudget holds the PodDisruptionBudget rules that the
// pods/eviction subresource and the disruption controller share: which
// pods a budget selects, which of them count as healthy, and the
// DisruptionAllowed condition that goes with status.disruptionsAllowed.
package disruptionbudget

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DeletionTimeout is how long an eviction's pod stays out of a budget's
// healthy count (status.disruptedPods) waiting to be deleted; after it the
// controller counts the pod again.
const DeletionTimeout = 2 * time.Minute

// Selector is the budget's pod selector: a null one selects nothing, an
// empty one every pod of the namespace (policy/v1's rule).
func Selector(pdb *policyv1.PodDisruptionBudget) labels.Selector {
	if pdb.Spec.Selector == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// Selects reports whether pdb covers pod.
func Selects(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	return pdb.Namespace == pod.Namespace && Selector(pdb).Matches(labels.Set(pod.Labels))
}

// Ready reports whether the pod's Ready condition is True: what a budget
// counts as healthy.
func Ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// SetAllowedCondition sets the DisruptionAllowed condition from
// status.disruptionsAllowed.
func SetAllowedCondition(pdb *policyv1.PodDisruptionBudget) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue,
		Reason: policyv1.SufficientPodsReason, ObservedGeneration: pdb.Status.ObservedGeneration}
	if pdb.Status.DisruptionsAllowed <= 0 {
		c.Status, c.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	meta.SetStatusCondition(&pdb.Status.Conditions, c)
}
