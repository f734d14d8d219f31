package garbagecollector_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	pollTimeout = 30 * time.Second
)

// TestGarbageCollector runs the collector in a real control plane with the
// ReplicaSet controller. There are no nodes, so pods stay unbound and a
// deleted pod goes at once (unless a finalizer holds it).
func TestGarbageCollector(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client()
	t.Run("background deletion removes the pods", func(t *testing.T) { testBackground(t, c) })
	t.Run("foreground deletion waits for blocking pods", func(t *testing.T) { testForeground(t, c) })
	t.Run("orphan deletion leaves the pods without the reference", func(t *testing.T) { testOrphan(t, c) })
	t.Run("several owners: the dependent goes with the last", func(t *testing.T) { testSeveralOwners(t, c) })
	t.Run("an owner that never existed", func(t *testing.T) { testNeverExisted(t, c) })
	// Last: the collector has long synced when the CRD comes.
	t.Run("a CRD created after the collector started", func(t *testing.T) { testLaterCRD(t, s) })
}

func testBackground(t *testing.T, c kubernetes.Interface) {
	ns := namespace(t, c, "gc-background")
	rs := createRS(t, c, ns, 3)
	waitPods(t, c, rs, 3)
	background := metav1.DeletePropagationBackground
	if err := c.AppsV1().ReplicaSets(ns).Delete(t.Context(), rs.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the ReplicaSet's pods gone", func(ctx context.Context) (bool, string) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
}

func testForeground(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	ns := namespace(t, c, "gc-foreground")
	rs := createRS(t, c, ns, 3)
	pods := waitPods(t, c, rs, 3)
	// A finalizer keeps one pod (a blocking dependent, as the ReplicaSet
	// controller sets blockOwnerDeletion) around after its deletion.
	held := pods[0].Name
	hold := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
	if _, err := c.CoreV1().Pods(ns).Patch(ctx, held, types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	foreground := metav1.DeletePropagationForeground
	if err := c.AppsV1().ReplicaSets(ns).Delete(ctx, rs.Name, metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	poll(t, "only the held pod left, terminating", func(ctx context.Context) (bool, string) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 1 && pods.Items[0].Name == held && pods.Items[0].DeletionTimestamp != nil, fmt.Sprint(podNames(pods.Items))
	})
	// The ReplicaSet waits for it, for a while.
	for range 10 {
		cur, err := c.AppsV1().ReplicaSets(ns).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ReplicaSet gone while a blocking pod remains: %v", err)
		}
		if cur.DeletionTimestamp == nil || !slices.Contains(cur.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("ReplicaSet deletionTimestamp %v finalizers %v", cur.DeletionTimestamp, cur.Finalizers)
		}
		time.Sleep(200 * time.Millisecond)
	}
	release := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.CoreV1().Pods(ns).Patch(ctx, held, types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the ReplicaSet gone", func(ctx context.Context) (bool, string) {
		cur, err := c.AppsV1().ReplicaSets(ns).Get(ctx, rs.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v", cur.Finalizers)
	})
}

func testOrphan(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	ns := namespace(t, c, "gc-orphan")
	rs := createRS(t, c, ns, 2)
	waitPods(t, c, rs, 2)
	orphan := metav1.DeletePropagationOrphan
	if err := c.AppsV1().ReplicaSets(ns).Delete(ctx, rs.Name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the ReplicaSet gone", func(ctx context.Context) (bool, string) {
		_, err := c.AppsV1().ReplicaSets(ns).Get(ctx, rs.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods left, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if len(p.OwnerReferences) != 0 || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: ownerReferences %v, deletionTimestamp %v", p.Name, p.OwnerReferences, p.DeletionTimestamp)
		}
	}
	// And they stay: nothing collects orphans.
	time.Sleep(time.Second)
	if pods, _ := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); len(pods.Items) != 2 {
		t.Errorf("%d orphans left, want 2", len(pods.Items))
	}
}

func testSeveralOwners(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	ns := namespace(t, c, "gc-owners")
	a, b := configMap(t, c, ns, "owner-a"), configMap(t, c, ns, "owner-b")
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: a.Name, UID: a.UID},
		{APIVersion: "v1", Kind: "ConfigMap", Name: b.Name, UID: b.UID},
	}}}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, a.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the reference to the deleted owner dropped", func(ctx context.Context) (bool, string) {
		cur, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(cur.OwnerReferences) == 1 && cur.OwnerReferences[0].UID == b.UID, fmt.Sprint(cur.OwnerReferences)
	})
	if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the dependent gone with its last owner", func(ctx context.Context) (bool, string) {
		_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func testNeverExisted(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	ns := namespace(t, c, "gc-never")
	real := configMap(t, c, ns, "real")
	// Same name as a live object, another UID: that owner is gone too.
	for name, owner := range map[string]metav1.OwnerReference{
		"no-such-owner": {APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "ghost", UID: "00000000-0000-0000-0000-000000000001"},
		"stale-uid":     {APIVersion: "v1", Kind: "ConfigMap", Name: real.Name, UID: "00000000-0000-0000-0000-000000000002"},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{owner}}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "dependents of missing owners gone", func(ctx context.Context) (bool, string) {
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"kube-root-ca.crt", "real"}) || slices.Equal(names, []string{"real"}), fmt.Sprint(names)
	})
}

func namespace(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func configMap(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func createRS(t *testing.T, c kubernetes.Interface, ns string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	created, err := c.AppsV1().ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// waitPods waits for n pods controlled by rs.
func waitPods(t *testing.T, c kubernetes.Interface, rs *appsv1.ReplicaSet, n int) []corev1.Pod {
	t.Helper()
	var owned []corev1.Pod
	poll(t, fmt.Sprintf("%d pods of %s", n, rs.Name), func(ctx context.Context) (bool, string) {
		pods, err := c.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		owned = nil
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID {
				owned = append(owned, p)
			}
		}
		return len(owned) == n, fmt.Sprint(podNames(owned))
	})
	return owned
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// poll waits up to pollTimeout for cond; its string says what it saw.
func poll(t *testing.T, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	servertest.Eventually(t, what, pollTimeout, cond)
}
