package statefulset_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const wait = 30 * time.Second

var labels = map[string]string{"app": "web"}

func newSet(replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), ServiceName: "web", PodManagementPolicy: policy,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "busybox:1.36",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}}}
}

// live lists the set's pods not being deleted, by name.
func live(ctx context.Context, c kubernetes.Interface) (map[string]corev1.Pod, error) {
	list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out, nil
}

func names(pods map[string]corev1.Pod) string {
	var out []string
	for n := range pods {
		out = append(out, n)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// setPhase marks a pod as an agent would: Running and ready, or ended.
func setPhase(ctx context.Context, c kubernetes.Interface, p corev1.Pod, phase corev1.PodPhase) error {
	ready := corev1.ConditionTrue
	if phase != corev1.PodRunning {
		ready = corev1.ConditionFalse
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || cur.UID != p.UID {
			return err
		}
		cur.Status.Phase = phase
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()}}
		_, err = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// readyUp marks every live pod of the set ready once, reporting them.
func readyUp(ctx context.Context, c kubernetes.Interface) (map[string]corev1.Pod, error) {
	pods, err := live(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			if err := setPhase(ctx, c, p, corev1.PodRunning); err != nil {
				return nil, err
			}
		}
	}
	return pods, nil
}

// TestOrderedStatefulSet: pods come one at a time in ordinal order, each
// once its predecessor is ready, with a stable name, hostname and claim;
// an update replaces them from the highest ordinal down; scaling down
// removes the highest first and keeps the claims.
func TestOrderedStatefulSet(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	if _, err := c.AppsV1().StatefulSets("default").Create(ctx, newSet(3, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	servertest.Eventually(t, "web-0, web-1, web-2 made in order", wait, func(ctx context.Context) (bool, string) {
		pods, err := live(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning && !slices.Contains(seen, p.Name) {
				seen = append(seen, p.Name)
				_ = setPhase(ctx, c, p, corev1.PodRunning)
			}
		}
		return len(pods) == 3, names(pods)
	})
	if want := []string{"web-0", "web-1", "web-2"}; !slices.Equal(seen, want) {
		t.Errorf("pods made in the order %v, want %v", seen, want)
	}
	pods, err := live(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	p := pods["web-1"]
	if p.Spec.Hostname != "web-1" || p.Spec.Subdomain != "web" || p.Labels["statefulset.kubernetes.io/pod-name"] != "web-1" ||
		p.Labels["apps.kubernetes.io/pod-index"] != "1" || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
		t.Errorf("web-1's identity: hostname %q subdomain %q labels %v volumes %+v", p.Spec.Hostname, p.Spec.Subdomain, p.Labels, p.Spec.Volumes)
	}
	claim, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-web-2", metav1.GetOptions{})
	if err != nil || claim.Labels["app"] != "web" {
		t.Fatalf("claim of web-2: %v %v", claim, err)
	}
	first := waitStatus(t, c, "ready", func(st appsv1.StatefulSetStatus) bool {
		return st.ReadyReplicas == 3 && st.CurrentRevision == st.UpdateRevision && st.CurrentRevision != ""
	})
	if p.Labels["controller-revision-hash"] != first.CurrentRevision {
		t.Errorf("pod revision %q, set's %q", p.Labels["controller-revision-hash"], first.CurrentRevision)
	}

	rollOut(t, c, "busybox:1.37")
	done := waitStatus(t, c, "rolled out", func(st appsv1.StatefulSetStatus) bool {
		return st.UpdatedReplicas == 3 && st.CurrentRevision == st.UpdateRevision && st.CurrentRevision != first.CurrentRevision
	})
	if done.UpdateRevision == first.UpdateRevision {
		t.Error("the update kept the first revision")
	}

	scale(t, c, 1)
	servertest.Eventually(t, "scaled down to web-0, claims kept", wait, func(ctx context.Context) (bool, string) {
		pods, err := live(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		claims, err := c.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return names(pods) == "web-0" && len(claims.Items) == 3, fmt.Sprintf("pods %s, %d claims", names(pods), len(claims.Items))
	})
}

// rollOut changes the template's image and follows the rolling update,
// marking each new pod ready; pods must be replaced highest first.
func rollOut(t *testing.T, c kubernetes.Interface, image string) {
	t.Helper()
	setImage(t, c, image)
	var order []string
	servertest.Eventually(t, "every pod at "+image, wait, func(ctx context.Context) (bool, string) {
		pods, err := readyUp(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		updated := 0
		for _, p := range pods {
			if p.Spec.Containers[0].Image == image {
				updated++
				if !slices.Contains(order, p.Name) {
					order = append(order, p.Name)
				}
			}
		}
		return updated == 3, fmt.Sprintf("%d of %d updated", updated, len(pods))
	})
	if want := []string{"web-2", "web-1", "web-0"}; !slices.Equal(order, want) {
		t.Errorf("pods replaced in the order %v, want %v", order, want)
	}
}

func setImage(t *testing.T, c kubernetes.Interface, image string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set, err := c.AppsV1().StatefulSets("default").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		set.Spec.Template.Spec.Containers[0].Image = image
		_, err = c.AppsV1().StatefulSets("default").Update(t.Context(), set, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func scale(t *testing.T, c kubernetes.Interface, n int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := c.AppsV1().StatefulSets("default").GetScale(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		sc.Spec.Replicas = n
		_, err = c.AppsV1().StatefulSets("default").UpdateScale(t.Context(), "web", sc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitStatus(t *testing.T, c kubernetes.Interface, what string, ok func(appsv1.StatefulSetStatus) bool) appsv1.StatefulSetStatus {
	t.Helper()
	var st appsv1.StatefulSetStatus
	servertest.Eventually(t, "status "+what, wait, func(ctx context.Context) (bool, string) {
		set, err := c.AppsV1().StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st = set.Status
		return set.Status.ObservedGeneration == set.Generation && ok(st), fmt.Sprintf("%+v", st)
	})
	return st
}

// TestParallelStatefulSet: pods are all made at once, not waiting to be
// ready; a pod that ended is replaced; a partition keeps the pods below
// it at the current revision; claims of pods scaled away go with them
// under whenScaled: Delete.
func TestParallelStatefulSet(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	set := newSet(3, appsv1.ParallelPodManagement)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	if _, err := c.AppsV1().StatefulSets("default").Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "three pods at once, none ready", wait, func(ctx context.Context) (bool, string) {
		pods, err := live(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		return len(pods) == 3, names(pods)
	})
	pods, err := readyUp(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	ended := pods["web-1"]
	if err := setPhase(ctx, c, ended, corev1.PodFailed); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "the failed web-1 replaced", wait, func(ctx context.Context) (bool, string) {
		pods, err := readyUp(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		p, ok := pods["web-1"]
		return ok && p.UID != ended.UID, names(pods)
	})

	setImage(t, c, "busybox:1.37")
	st := waitStatus(t, c, "web-2 updated alone", func(st appsv1.StatefulSetStatus) bool {
		pods, err := readyUp(ctx, c)
		return err == nil && st.UpdatedReplicas == 1 && st.CurrentReplicas == 2 && pods["web-2"].Spec.Containers[0].Image == "busybox:1.37"
	})
	if st.CurrentRevision == st.UpdateRevision {
		t.Errorf("the partition let the current revision move: %+v", st)
	}

	scale(t, c, 1)
	servertest.Eventually(t, "scaled to web-0, the others' claims gone", wait, func(ctx context.Context) (bool, string) {
		pods, err := live(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		claims, err := c.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, cl := range claims.Items {
			if cl.DeletionTimestamp == nil {
				left = append(left, cl.Name)
			}
		}
		return names(pods) == "web-0" && slices.Equal(left, []string{"data-web-0"}), fmt.Sprintf("pods %s, claims %v", names(pods), left)
	})
}
