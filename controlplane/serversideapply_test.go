package controlplane_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// TestServerSideApply: an apply creates what is missing and records its
// manager's fields; another manager's apply of the same field is refused
// with a conflict naming the owner, unless forced; an update records its
// manager too.
func TestServerSideApply(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	cms := c.CoreV1().ConfigMaps("default")
	cm, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", "default").WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply creating: %v", err)
	}
	if cm.Data["a"] != "1" || !hasManager(cm.ManagedFields, "alice", metav1.ManagedFieldsOperationApply) {
		t.Fatalf("created by apply: data %v managedFields %+v", cm.Data, cm.ManagedFields)
	}
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("applied", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice"`) || !strings.Contains(err.Error(), ".data.a") {
		t.Fatalf("bob applying alice's field: %v, want a conflict naming alice and .data.a", err)
	}
	cm, err = cms.Apply(ctx, corev1ac.ConfigMap("applied", "default").WithData(map[string]string{"a": "2", "b": "3"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil || cm.Data["a"] != "2" || cm.Data["b"] != "3" {
		t.Fatalf("forced apply: %v %v", cm, err)
	}
	// alice's apply without a field she no longer owns keeps bob's.
	cm, err = cms.Apply(ctx, corev1ac.ConfigMap("applied", "default").WithLabels(map[string]string{"team": "x"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil || cm.Data["a"] != "2" || cm.Labels["team"] != "x" {
		t.Fatalf("alice's second apply: %v %v", cm, err)
	}
	cm.Data["c"] = "4"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "carol"})
	if err != nil || !hasManager(cm.ManagedFields, "carol", metav1.ManagedFieldsOperationUpdate) {
		t.Fatalf("update: %v managedFields %+v", err, cm.ManagedFields)
	}
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("applied", "default"), metav1.ApplyOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("apply without a field manager: %v, want BadRequest", err)
	}
}

func hasManager(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op {
			return true
		}
	}
	return false
}
