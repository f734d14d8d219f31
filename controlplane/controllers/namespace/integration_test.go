package namespace_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const pollStep = 100 * time.Millisecond

func TestDeletingNamespace(t *testing.T) {
	s := servertest.Start(t)
	t.Run("removes its content, then itself", func(t *testing.T) { testRemovesContent(t, s) })
	t.Run("waits for terminating pods before the rest", func(t *testing.T) { testWaitsForPods(t, s.Client()) })
}

func testRemovesContent(t *testing.T, s *servertest.Server) {
	ctx, c := t.Context(), s.Client()
	const ns = "doomed"
	createNamespace(t, c, ns)
	meta := metav1.ObjectMeta{Name: "x", Labels: map[string]string{"app": "web"}}
	must(t)(c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{}))
	must(t)(c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta}, metav1.CreateOptions{}))
	must(t)(c.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}},
	}}, metav1.CreateOptions{}))
	for i := range 2 {
		must(t)(c.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p%d", i), ""), metav1.CreateOptions{}))
	}

	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "namespace gone", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	dyn := dynamic.NewForConfigOrDie(s.RESTConfig())
	for _, r := range []string{"configmaps", "secrets", "services", "endpoints", "pods", "serviceaccounts"} {
		l, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource(r)).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 0 {
			t.Errorf("%s left in the deleted namespace: %v %v", r, err, l)
		}
	}
}

// testWaitsForPods deletes a namespace holding a pod bound to a node: the
// pod only gets a deletionTimestamp (its node would finish it), so the
// namespace must wait, with its other content untouched, until the pod
// is gone.
func testWaitsForPods(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	const ns = "slow"
	createNamespace(t, c, ns)
	must(t)(c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}))
	must(t)(c.CoreV1().Pods(ns).Create(ctx, pod("bound", "n1"), metav1.CreateOptions{}))

	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, "condition NamespaceContentRemaining naming pods", func(ctx context.Context) (bool, error) {
		got, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.NamespaceContentRemaining && cond.Status == corev1.ConditionTrue {
				return strings.Contains(cond.Message, "pods"), nil
			}
		}
		return false, nil
	})
	p, err := c.CoreV1().Pods(ns).Get(ctx, "bound", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("bound pod is not terminating: %v %+v", err, p.ObjectMeta)
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{}); err != nil {
		t.Errorf("configmap deleted while a pod remains: %v", err)
	}

	// What the node would do once the containers stopped.
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "namespace gone after its pod", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pod returns a pod of app web, bound to node when it is not empty.
func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

// must fails the test on a create's error.
func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func poll(t *testing.T, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), pollStep, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
