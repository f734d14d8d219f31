package disruptionbudget

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectsAndCondition(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{"app": "db"}}}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	if Selects(pdb, pod) {
		t.Error("a null selector selected a pod")
	}
	pdb.Spec.Selector = &metav1.LabelSelector{}
	if !Selects(pdb, pod) {
		t.Error("an empty selector did not select the namespace's pod")
	}
	pdb.Spec.Selector.MatchLabels = map[string]string{"app": "web"}
	if Selects(pdb, pod) {
		t.Error("a selector of other labels selected the pod")
	}
	SetAllowedCondition(pdb)
	if c := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c == nil || c.Reason != policyv1.InsufficientPodsReason {
		t.Errorf("no disruptions allowed: condition %+v", c)
	}
	pdb.Status.DisruptionsAllowed = 1
	SetAllowedCondition(pdb)
	if !meta.IsStatusConditionTrue(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition) {
		t.Errorf("one disruption allowed: conditions %+v", pdb.Status.Conditions)
	}
}
