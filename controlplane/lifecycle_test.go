package controlplane_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestBindingAndGracefulPodDeletion(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("bound", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := pods.Get(ctx, "bound", metav1.GetOptions{})
	if got.Spec.NodeName != "node-1" || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != corev1.PodScheduled {
		t.Fatalf("after binding: node %q conditions %v", got.Spec.NodeName, got.Status.Conditions)
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("second binding: got %v, want Conflict", err)
	}

	var code int
	var answer corev1.Pod
	err := c.CoreV1().RESTClient().Delete().AbsPath("/api/v1/namespaces/default/pods/bound").Do(ctx).StatusCode(&code).Into(&answer)
	if err != nil || code != http.StatusOK || answer.DeletionTimestamp == nil {
		t.Fatalf("a graceful deletion answers %d with the pod being deleted: %v %+v", code, err, answer.ObjectMeta)
	}
	got, err = pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("a bound pod is deleted gracefully: %v %+v", err, got.ObjectMeta)
	}
	if got.Generation != 2 {
		t.Errorf("generation %d after the graceful deletion began, want 2", got.Generation)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("grace period 0 removes the pod: %v", err)
	}
}

func TestEvictionAndPreconditions(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")
	p, err := pods.Create(ctx, testPod("ev", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrong := types.UID("not-the-uid")
	if err := pods.Delete(ctx, "ev", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}); !apierrors.IsConflict(err) {
		t.Fatalf("wrong uid precondition: got %v, want Conflict", err)
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "ev", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
	if err := pods.EvictV1(ctx, eviction); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "ev", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod: %v", err)
	}
}

func TestFinalizersDryRunAndDeleteCollection(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	cms := c.CoreV1().ConfigMaps("default")
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := cms.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("finalizer holds the object: %v %v", err, got)
	}
	got.Finalizers = nil
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("removing the last finalizer deletes: %v", err)
	}

	dry, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Name != "dry" {
		t.Fatalf("dry run create: %v", err)
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run persisted: %v", err)
	}

	for _, n := range []string{"x1", "x2", "keep"} {
		team := map[bool]string{true: "keep", false: "drop"}[n == "keep"]
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"t": team}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "t=drop"}); err != nil {
		t.Fatal(err)
	}
	list, _ := cms.List(ctx, metav1.ListOptions{LabelSelector: "t"})
	if len(list.Items) != 1 || list.Items[0].Name != "keep" {
		t.Fatalf("deletecollection left %v", list.Items)
	}
}

func TestStatusAndScaleSubresources(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	deps := c.AppsV1().Deployments("default")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: testPod("", nil).Spec},
		},
	}
	d, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || *d.Spec.RevisionHistoryLimit != 10 {
		t.Fatalf("deployment defaults: %+v", d.Spec)
	}
	d.Status.Replicas = 7
	d.Spec.Paused = true
	st, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil || st.Status.Replicas != 7 || st.Spec.Paused || st.Generation != 1 {
		t.Fatalf("status update changes status only: %v %+v gen %d", err, st.Status, st.Generation)
	}
	st.Status.Replicas = 0
	st.Spec.MinReadySeconds = 5
	main, err := deps.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil || main.Status.Replicas != 7 || main.Generation != 2 {
		t.Fatalf("main update keeps status, bumps generation: %v %+v gen %d", err, main.Status, main.Generation)
	}
	scale, err := deps.GetScale(ctx, "d", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=d" || scale.Status.Replicas != 7 {
		t.Fatalf("get scale: %v %+v", err, scale)
	}
	scale.Spec.Replicas = 4
	if _, err := deps.UpdateScale(ctx, "d", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", ResourceVersion: scale.ResourceVersion}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}}
	if _, err := deps.UpdateScale(ctx, "d", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale scale: got %v, want Conflict", err)
	}
	got, _ := deps.Get(ctx, "d", metav1.GetOptions{})
	if *got.Spec.Replicas != 4 {
		t.Fatalf("replicas after scale: %d", *got.Spec.Replicas)
	}
	bad := got.DeepCopy()
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	if _, err := deps.Update(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.selector") {
		t.Fatalf("selector change: got %v, want Invalid on spec.selector", err)
	}
}

func TestNamespaceDeletion(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	if err := c.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting kube-system: got %v, want Forbidden", err)
	}
	// A finalizer of the test's own keeps the namespace Terminating after
	// the namespace controller has emptied it and removed "kubernetes".
	hold := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes, "skiff.test/hold"}}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, hold, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("deleted namespace is Terminating: %v %+v", err, ns.Status)
	}
	if _, err := c.CoreV1().ConfigMaps("gone").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Fatalf("create in a terminating namespace: got %v, want Forbidden with cause NamespaceTerminating", err)
	}
	ns.Spec.Finalizers = nil
	ns.ResourceVersion = "" // the namespace controller writes it meanwhile
	if _, err := c.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("finalized namespace: %v", err)
	}
}

func TestNodeStatusAndPodCIDR(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	nodes := c.CoreV1().Nodes()
	n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	if n, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil || len(n.Status.Conditions) != 1 {
		t.Fatalf("node status: %v %+v", err, n.Status)
	}
	n.Spec.PodCIDR = "10.244.2.0/24"
	if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing podCIDR: got %v, want Invalid", err)
	}
	patched, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	if err != nil || !patched.Spec.Unschedulable || len(patched.Status.Conditions) != 1 {
		t.Fatalf("cordon keeps status: %v %+v", err, patched)
	}
	list, err := nodes.List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=true"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("field selector spec.unschedulable: %v %d", err, len(list.Items))
	}
}
