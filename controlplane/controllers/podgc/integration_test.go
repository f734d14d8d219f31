package podgc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	pollTimeout = 30 * time.Second
	// noScheduler keeps the default scheduler away from the test's pods;
	// the test binds them itself.
	noScheduler = "skiff-test-none"
)

// TestPodGC runs the collector in a real control plane (its quarantine is
// servertest's short grace period) without agents: nodes are plain Node
// objects.
func TestPodGC(t *testing.T) {
	s := servertest.StartWith(t, func(cfg *controlplane.Config) { cfg.TerminatedPodGCThreshold = 2 })
	c := s.Client()
	ctx := t.Context()
	ns := "podgc"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"doomed", "staying"} {
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct{ name, node string }{{"on-doomed-1", "doomed"}, {"on-doomed-2", "doomed"}, {"on-staying", "staying"}} {
		createPod(t, c, ns, p.name)
		if err := c.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Target: corev1.ObjectReference{Kind: "Node", Name: p.node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Four terminated pods, threshold 2: the two oldest go (created in
	// name order, so names break creation-time ties the same way).
	for i, phase := range []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed, corev1.PodSucceeded, corev1.PodSucceeded} {
		name := createPod(t, c, ns, fmt.Sprintf("done-%d", i)).Name
		// Retry: the scheduler may report the unbound pod first.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Phase = phase
			_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// A bound pod is deleted gracefully and waits for its node's agent;
	// with the node gone, no agent will come.
	if err := c.CoreV1().Pods(ns).Delete(ctx, "on-doomed-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := c.CoreV1().Nodes().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pods of the deleted node gone, the terminated pods down to 2", func(ctx context.Context) (bool, string) {
		names := podNames(t, c, ns)
		return slices.Equal(names, []string{"done-2", "done-3", "on-staying"}), fmt.Sprint(names)
	})
	if took, quarantine := time.Since(deleted), s.Config.NodeMonitorGracePeriod; took < quarantine-time.Second {
		t.Errorf("pods of the deleted node went after %s, before the %s quarantine", took, quarantine)
	}
	p, err := c.CoreV1().Pods(ns).Get(ctx, "on-staying", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Errorf("pod on a live node touched: %v %v", err, p.DeletionTimestamp)
	}
}

func createPod(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{SchedulerName: noScheduler, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func podNames(t *testing.T, c kubernetes.Interface, ns string) []string {
	l, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return []string{err.Error()}
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// poll waits up to pollTimeout for cond; its string says what it saw.
func poll(t *testing.T, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	servertest.Eventually(t, what, pollTimeout, cond)
}
