package daemonset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const wait = 30 * time.Second

func createNode(t *testing.T, c kubernetes.Interface, name string, taints ...corev1.Taint) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
	if _, err := c.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podsByNode lists the DaemonSet's live pods by the node they are pinned
// to, marking each running and ready as an agent would.
func podsByNode(ctx context.Context, t *testing.T, c kubernetes.Interface) (map[string][]corev1.Pod, error) {
	list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		return nil, err
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		node := terms[0].MatchFields[0].Values[0]
		out[node] = append(out[node], p)
		if p.Status.Phase != corev1.PodRunning {
			setReady(ctx, c, p)
		}
	}
	return out, nil
}

// setReady marks a pod running and ready; one deleted meanwhile is left.
func setReady(ctx context.Context, c kubernetes.Interface, p corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	_, _ = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
}

// TestDaemonSetRunsOnEveryNodeAndRollsOut: one pod per node that
// tolerates its taints, pinned there; a template change rolls out as a
// new ControllerRevision, replacing the pods.
func TestDaemonSetRunsOnEveryNodeAndRollsOut(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	createNode(t, c, "n1")
	createNode(t, c, "n2", corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	createNode(t, c, "n3", corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox:1.36"}}}}}}
	ds, err := c.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "a ready pod on n1 and the cordoned n2, none on the tainted n3", wait, func(ctx context.Context) (bool, string) {
		byNode, err := podsByNode(ctx, t, c)
		if err != nil {
			return false, err.Error()
		}
		got, err := c.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := got.Status
		return len(byNode["n1"]) == 1 && len(byNode["n2"]) == 1 && len(byNode) == 2 && st.DesiredNumberScheduled == 2 && st.NumberAvailable == 2,
			fmt.Sprintf("pods %v, status %+v", len(byNode), st)
	})

	ds, err = c.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	if _, err := c.AppsV1().DaemonSets("default").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "every node on the new template, two revisions", wait, func(ctx context.Context) (bool, string) {
		byNode, err := podsByNode(ctx, t, c)
		if err != nil {
			return false, err.Error()
		}
		revs, err := c.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, err.Error()
		}
		updated := 0
		for _, pods := range byNode {
			if len(pods) == 1 && pods[0].Spec.Containers[0].Image == "busybox:1.37" {
				updated++
			}
		}
		return updated == 2 && len(revs.Items) == 2, fmt.Sprintf("%d of %d nodes updated, %d revisions", updated, len(byNode), len(revs.Items))
	})
	got, err := c.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations["deprecated.daemonset.template.generation"] != "2" {
		t.Errorf("template generation %q, want 2", got.Annotations["deprecated.daemonset.template.generation"])
	}
}
