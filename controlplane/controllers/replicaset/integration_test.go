package replicaset_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	// pollTimeout bounds every wait.
	pollTimeout = 20 * time.Second
	// settle is how long a count must hold once reached.
	settle = 3 * time.Second
)

// TestReplicaSetController runs the controller in a real control plane.
// There are no nodes, so pods stay unbound and Pending, and a deleted pod
// goes at once.
func TestReplicaSetController(t *testing.T) {
	client := servertest.Start(t).Client()
	t.Run("creates exactly replicas and replaces a deleted pod", func(t *testing.T) { testCreate(t, client) })
	t.Run("scales down", func(t *testing.T) { testScaleDown(t, client) })
	t.Run("adopts orphans and releases relabelled pods", func(t *testing.T) { testAdoptRelease(t, client) })
	t.Run("status follows pod readiness", func(t *testing.T) { testReadiness(t, client) })
}

func testCreate(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	ns := newNamespace(t, client, "rs-create")
	rs := createRS(t, client, ns, "web", 10, 0)

	pods := waitForPods(t, client, rs, 10)
	holdsPods(t, client, rs, 10)
	for _, p := range pods {
		checkControlledBy(t, p, rs)
		if !strings.HasPrefix(p.Name, "web-") || p.Labels["app"] != "web" || p.Labels["tier"] != "front" {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	var want []string
	for _, p := range pods {
		want = append(want, "Created pod: "+p.Name)
	}
	waitForEvents(t, client, rs, "SuccessfulCreate", want)
	waitForStatus(t, client, rs, "replicas=10", func(st appsv1.ReplicaSetStatus) bool { return st.Replicas == 10 })

	victim := pods[3].Name
	if err := client.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replaced := waitFor(t, "a replacement for "+victim, func() (bool, string) {
		cur := ownedPods(t, client, rs)
		names := podNames(cur)
		return len(cur) == 10 && !slices.Contains(names, victim), fmt.Sprint(names)
	})
	t.Logf("replaced %s: %s", victim, replaced)
	holdsPods(t, client, rs, 10)
}

func testScaleDown(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	ns := newNamespace(t, client, "rs-scale")
	rs := createRS(t, client, ns, "web", 10, 0)
	waitForPods(t, client, rs, 10)

	scale, err := client.AppsV1().ReplicaSets(ns).GetScale(ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if _, err := client.AppsV1().ReplicaSets(ns).UpdateScale(ctx, rs.Name, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPods(t, client, rs, 3)
	holdsPods(t, client, rs, 3)
	waitForStatus(t, client, rs, "replicas=3", func(st appsv1.ReplicaSetStatus) bool {
		return st.Replicas == 3 && st.ObservedGeneration == 2
	})
	events := waitFor(t, "7 SuccessfulDelete events", func() (bool, string) {
		got := eventMessages(t, client, rs, "SuccessfulDelete")
		return len(got) == 7, fmt.Sprint(got)
	})
	t.Logf("delete events: %s", events)
}

func testAdoptRelease(t *testing.T, client kubernetes.Interface) {
	ctx := t.Context()
	ns := newNamespace(t, client, "rs-adopt")
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:       podSpec(),
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := createRS(t, client, ns, "web", 3, 0)

	pods := waitForPods(t, client, rs, 3)
	holdsPods(t, client, rs, 3)
	if !slices.Contains(podNames(pods), "orphan") {
		t.Fatalf("orphan not adopted: owned pods %v", podNames(pods))
	}
	adopted, err := client.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkControlledBy(t, adopted, rs)
	if got := eventMessages(t, client, rs, "SuccessfulCreate"); len(got) != 2 {
		t.Errorf("create events %v, want 2 beside the adopted orphan", got)
	}

	// Relabelled out of the selector: released, and replaced.
	patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, "orphan", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the relabelled pod released", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(p.OwnerReferences) == 0, fmt.Sprint(p.OwnerReferences)
	})
	waitFor(t, "3 owned pods without the released one", func() (bool, string) {
		names := podNames(ownedPods(t, client, rs))
		return len(names) == 3 && !slices.Contains(names, "orphan"), fmt.Sprint(names)
	})
	holdsPods(t, client, rs, 3)
}

func testReadiness(t *testing.T, client kubernetes.Interface) {
	ns := newNamespace(t, client, "rs-ready")
	rs := createRS(t, client, ns, "web", 2, 0)
	pods := waitForPods(t, client, rs, 2)

	setReady(t, client, pods[0], true)
	waitForStatus(t, client, rs, "1 ready and available", func(st appsv1.ReplicaSetStatus) bool {
		return st.ReadyReplicas == 1 && st.AvailableReplicas == 1
	})
	setReady(t, client, pods[1], true)
	waitForStatus(t, client, rs, "2 ready", func(st appsv1.ReplicaSetStatus) bool {
		return st.ReadyReplicas == 2 && st.AvailableReplicas == 2
	})
	setReady(t, client, pods[0], false)
	waitForStatus(t, client, rs, "1 ready again", func(st appsv1.ReplicaSetStatus) bool {
		return st.ReadyReplicas == 1 && st.AvailableReplicas == 1
	})

	// With minReadySeconds a ready pod becomes available later, with no
	// event to wake the controller then.
	slow := createRS(t, client, ns, "slow", 1, 3)
	slowPods := waitForPods(t, client, slow, 1)
	setReady(t, client, slowPods[0], true)
	waitForStatus(t, client, slow, "ready, not yet available", func(st appsv1.ReplicaSetStatus) bool {
		return st.ReadyReplicas == 1 && st.AvailableReplicas == 0
	})
	waitForStatus(t, client, slow, "available after minReadySeconds", func(st appsv1.ReplicaSetStatus) bool {
		return st.ReadyReplicas == 1 && st.AvailableReplicas == 1
	})
}

// setReady sets the pod's Ready condition as an agent would.
func setReady(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, ready bool) {
	t.Helper()
	servertest.SetPodRunning(t, client, pod.Namespace, pod.Name, "", ready)
}

func newNamespace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}
}

// createRS creates a ReplicaSet selecting app=web whose template adds
// tier=front.
func createRS(t *testing.T, client kubernetes.Interface, ns, name string, replicas, minReadySeconds int32) *appsv1.ReplicaSet {
	t.Helper()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: minReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "front"}},
				Spec:       podSpec(),
			},
		},
	}
	created, err := client.AppsV1().ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// ownedPods lists the pods rs controls that are not being deleted.
func ownedPods(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet) []*corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(rs.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods
}

func podNames(pods []*corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// matchingPods counts the pods of the namespace rs selects, owned or not.
func matchingPods(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet) int {
	t.Helper()
	sel := labels.SelectorFromSet(rs.Spec.Selector.MatchLabels).String()
	list, err := client.CoreV1().Pods(rs.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func waitForPods(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	waitFor(t, fmt.Sprintf("%d pods of %s", n, rs.Name), func() (bool, string) {
		pods = ownedPods(t, client, rs)
		return len(pods) == n && matchingPods(t, client, rs) == n, fmt.Sprintf("%d owned: %v", len(pods), podNames(pods))
	})
	return pods
}

// holdsPods checks for settle that rs has exactly n pods, never more.
func holdsPods(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet, n int) {
	t.Helper()
	servertest.Consistently(t, fmt.Sprintf("%s has %d pods", rs.Name, n), settle, func() (bool, string) {
		got := matchingPods(t, client, rs)
		return got == n, fmt.Sprintf("%d pods", got)
	})
}

// waitFor polls cond until it holds and returns its last description.
func waitFor(t *testing.T, what string, cond func() (bool, string)) string {
	t.Helper()
	return servertest.Eventually(t, what, pollTimeout, func(context.Context) (bool, string) { return cond() })
}

func waitForStatus(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet, what string, ok func(appsv1.ReplicaSetStatus) bool) {
	t.Helper()
	waitFor(t, rs.Name+" status "+what, func() (bool, string) {
		cur, err := client.AppsV1().ReplicaSets(rs.Namespace).Get(t.Context(), rs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ok(cur.Status), fmt.Sprintf("%+v", cur.Status)
	})
}

func checkControlledBy(t *testing.T, pod *corev1.Pod, rs *appsv1.ReplicaSet) {
	t.Helper()
	if len(pod.OwnerReferences) != 1 {
		t.Errorf("pod %s owners %+v, want only %s", pod.Name, pod.OwnerReferences, rs.Name)
		return
	}
	ref := pod.OwnerReferences[0]
	if ref.APIVersion != "apps/v1" || ref.Kind != "ReplicaSet" || ref.Name != rs.Name || ref.UID != rs.UID ||
		ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("pod %s owner %+v, want controller %s/%s with blockOwnerDeletion", pod.Name, ref, rs.Name, rs.UID)
	}
}

// eventMessages lists the messages of rs's events with reason.
func eventMessages(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet, reason string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(rs.Namespace).List(t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=ReplicaSet,involvedObject.name=" + rs.Name + ",reason=" + reason,
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID != rs.UID || e.Source.Component != "replicaset-controller" {
			continue
		}
		// client-go's recorder folds the tenth similar event and later
		// ones into one, as kube-controller-manager's does.
		msgs = append(msgs, strings.TrimPrefix(e.Message, "(combined from similar events): "))
	}
	slices.Sort(msgs)
	return msgs
}

func waitForEvents(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet, reason string, want []string) {
	t.Helper()
	slices.Sort(want)
	waitFor(t, fmt.Sprintf("%d %s events", len(want), reason), func() (bool, string) {
		got := eventMessages(t, client, rs, reason)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}
