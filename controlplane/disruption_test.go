package controlplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestEvictionHonoursDisruptionBudgets: the disruption controller counts
// a ReplicaSet's ready pods against its budget, and pods/eviction spends
// the budget, refusing with 429 and the budget named once it is spent,
// as `kubectl drain` expects.
func TestEvictionHonoursDisruptionBudgets(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	labels := map[string]string{"app": "db"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "busybox:1.36"}}}}}}
	if _, err := c.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdbs := c.PolicyV1().PodDisruptionBudgets("default")
	pdb, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := readyPods(t, c, 3)
	waitBudget(t, c, "healthy 3, desired 3, allowed 0", func(st policyv1.PodDisruptionBudgetStatus) bool {
		return st.CurrentHealthy == 3 && st.DesiredHealthy == 3 && st.ExpectedPods == 3 && st.DisruptionsAllowed == 0
	})
	err = evict(ctx, c, pods[0])
	if !apierrors.IsTooManyRequests(err) || !apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause) {
		t.Fatalf("eviction beyond the budget: %v, want 429 with a DisruptionBudget cause", err)
	}

	// maxUnavailable of a third of the ReplicaSet's replicas (rounded up)
	// allows one.
	pdb, err = pdbs.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = nil, ptr.To(intstr.FromString("33%"))
	if _, err := pdbs.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, c, "allowed 1 of the ReplicaSet's 3", func(st policyv1.PodDisruptionBudgetStatus) bool {
		return st.ObservedGeneration == 2 && st.DesiredHealthy == 2 && st.DisruptionsAllowed == 1
	})
	if err := evict(ctx, c, pods[0]); err != nil {
		t.Fatalf("eviction within the budget: %v", err)
	}
	err = evict(ctx, c, pods[1])
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: %v, want 429: the first one spent the budget", err)
	}

	// A running pod that is not ready may go only while the budget has
	// its healthy pods, or always under AlwaysAllow.
	servertest.SetPodRunning(t, c, "default", pods[2], "", false)
	waitBudget(t, c, "healthy 1 of 2", func(st policyv1.PodDisruptionBudgetStatus) bool { return st.CurrentHealthy == 1 })
	if err := evict(ctx, c, pods[2]); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting an unready pod of an unhealthy budget: %v, want 429", err)
	}
	pdb, err = pdbs.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	if _, err := pdbs.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict(ctx, c, pods[2]); err != nil {
		t.Fatalf("evicting an unready pod under AlwaysAllow: %v", err)
	}
}

// readyPods waits for n pods labelled app=db, marks them running and
// ready, and returns their names.
func readyPods(t *testing.T, c kubernetes.Interface, n int) []string {
	t.Helper()
	var names []string
	servertest.Eventually(t, fmt.Sprintf("%d pods", n), 30*time.Second, func(ctx context.Context) (bool, string) {
		list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err.Error()
		}
		names = names[:0]
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		return len(names) == n, fmt.Sprint(names)
	})
	for _, name := range names {
		servertest.SetPodRunning(t, c, "default", name, "", true)
	}
	return names
}

func waitBudget(t *testing.T, c kubernetes.Interface, what string, ok func(policyv1.PodDisruptionBudgetStatus) bool) {
	t.Helper()
	servertest.Eventually(t, "budget "+what, 30*time.Second, func(ctx context.Context) (bool, string) {
		pdb, err := c.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ok(pdb.Status), fmt.Sprintf("%+v", pdb.Status)
	})
}

func evict(ctx context.Context, c kubernetes.Interface, pod string) error {
	return c.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"}})
}
