package controlplane_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestAdmissionPlugins runs the server's admission chain on pods: a
// LimitRange's defaults land in a new pod and its maximum refuses one;
// PodSecurity's restricted level refuses a privileged pod with the
// library's message.
func TestAdmissionPlugins(t *testing.T) {
	s := servertest.Start(t)
	admin, ctx := s.Client(), t.Context()
	mustNamespace(t, admin, "limited", nil)
	mustNamespace(t, admin, "secure", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})

	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
		Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	if _, err := admin.CoreV1().LimitRanges("limited").Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	try := 0
	servertest.Eventually(t, "a pod with the LimitRange's default", 10*time.Second, func(ctx context.Context) (bool, string) {
		try++
		pod, err := admin.CoreV1().Pods("limited").Create(ctx, simplePod(fmt.Sprintf("p%d", try), nil), metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pod.Spec.Containers[0].Resources.Limits.Cpu().String() == "300m", pod.Annotations["kubernetes.io/limit-ranger"]
	})
	big := simplePod("big", nil)
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	_, err := admin.CoreV1().Pods("limited").Create(ctx, big, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maximum cpu usage per Container is 1, but limit is 2") {
		t.Errorf("a pod over the LimitRange's max: %v", err)
	}
	resize := `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"2"}}}]}}`
	_, err = admin.CoreV1().Pods("limited").Patch(ctx, fmt.Sprintf("p%d", try), types.StrategicMergePatchType, []byte(resize), metav1.PatchOptions{}, "resize")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maximum cpu usage per Container is 1, but limit is 2") {
		t.Errorf("a resize over the LimitRange's max: %v", err)
	}

	yes := true
	_, err = admin.CoreV1().Pods("secure").Create(ctx, simplePod("priv", &corev1.SecurityContext{Privileged: &yes}), metav1.CreateOptions{})
	if want := `pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a privileged pod in a restricted namespace: %v, want %q", err, want)
	}
}

// TestPriorityClasses: the system classes exist and stay; a pod's class
// sets its priority, the global default is the one default, and an
// unknown class is refused.
func TestPriorityClasses(t *testing.T) {
	s := servertest.Start(t)
	admin, ctx := s.Client(), t.Context()
	classes := admin.SchedulingV1().PriorityClasses()
	if pc, err := classes.Get(ctx, "system-node-critical", metav1.GetOptions{}); err != nil || pc.Value != 2000001000 {
		t.Fatalf("system-node-critical: %v %v", pc, err)
	}
	err := classes.Delete(ctx, "system-cluster-critical", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this is a system priority class and cannot be deleted") {
		t.Errorf("delete a system class: %v", err)
	}
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		{ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 10, GlobalDefault: true},
	} {
		if _, err := classes.Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Value: 2_000_000_000}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "maximum allowed value of a user defined priority is 1000000000") {
		t.Errorf("a class over the user maximum: %v", err)
	}
	servertest.Eventually(t, "a second global default refused", 10*time.Second, func(ctx context.Context) (bool, string) {
		_, err := classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 5, GlobalDefault: true}, metav1.CreateOptions{})
		if err == nil {
			_ = classes.Delete(ctx, "other", metav1.DeleteOptions{})
		}
		return err != nil && strings.Contains(err.Error(), "PriorityClass normal is already marked as default. Only one default can exist"), fmt.Sprint(err)
	})
	pod := simplePod("urgent", nil)
	pod.Spec.PriorityClassName = "high"
	if got, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil || *got.Spec.Priority != 1000 {
		t.Errorf("a pod of class high: %v", err)
	}
	if got, err := admin.CoreV1().Pods("default").Create(ctx, simplePod("plain", nil), metav1.CreateOptions{}); err != nil ||
		*got.Spec.Priority != 10 || got.Spec.PriorityClassName != "normal" {
		t.Errorf("a pod of no class: %v", err)
	}
	pod = simplePod("lost", nil)
	pod.Spec.PriorityClassName = "nope"
	_, err = admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if want := `pods "lost" is forbidden: no PriorityClass with name nope was found`; err == nil || err.Error() != want {
		t.Errorf("a pod of an unknown class: %v, want %q", err, want)
	}
}

// TestResourceQuota: the controller fills a quota's status; a create over
// it is refused with kube-apiserver's message and writes nothing; a pod
// leaving a limited compute resource unstated is refused; deleting a pod
// gives its usage back.
func TestResourceQuota(t *testing.T) {
	s := servertest.Start(t)
	admin, ctx := s.Client(), t.Context()
	mustNamespace(t, admin, "limited", nil)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("1"), corev1.ResourceRequestsMemory: resource.MustParse("1Gi")}}}
	if _, err := admin.CoreV1().ResourceQuotas("limited").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used := func(want string) {
		t.Helper()
		servertest.Eventually(t, "quota used "+want, 20*time.Second, func(ctx context.Context) (bool, string) {
			q, err := admin.CoreV1().ResourceQuotas("limited").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got := fmt.Sprintf("pods=%s,requests.memory=%s", q.Status.Used.Pods(), q.Status.Used.Name(corev1.ResourceRequestsMemory, resource.BinarySI))
			// Used reads zero before the controller counts: the quota is
			// counted once its status has the limits.
			return len(q.Status.Hard) > 0 && got == want, got
		})
	}
	used("pods=0,requests.memory=0")
	withMemory := func(name string) *corev1.Pod {
		p := simplePod(name, nil)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
		return p
	}
	pods := admin.CoreV1().Pods("limited")
	if _, err := pods.Create(ctx, withMemory("first"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used("pods=1,requests.memory=512Mi")
	_, err := pods.Create(ctx, withMemory("second"), metav1.CreateOptions{})
	if want := `pods "second" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`; err == nil || err.Error() != want {
		t.Errorf("a pod over quota: %v, want %q", err, want)
	}
	if _, err := pods.Get(ctx, "second", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod was written: %v", err)
	}
	_, err = pods.Create(ctx, simplePod("bare", nil), metav1.CreateOptions{})
	if want := `pods "bare" is forbidden: failed quota: q: must specify requests.memory`; err == nil || err.Error() != want {
		t.Errorf("a pod without a memory request: %v, want %q", err, want)
	}
	if err := pods.Delete(ctx, "first", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	used("pods=0,requests.memory=0")
	if _, err := pods.Create(ctx, withMemory("second"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod once usage came back: %v", err)
	}
	used("pods=1,requests.memory=512Mi")
	resizeTo := func(mem string) error {
		patch := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"` + mem + `"}}}]}}`
		_, err := pods.Patch(ctx, "second", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
		return err
	}
	if err := resizeTo("1536Mi"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: q, requested: requests.memory=1Gi") {
		t.Errorf("a resize over quota: %v", err)
	}
	if err := resizeTo("1Gi"); err != nil {
		t.Errorf("a resize within quota: %v", err)
	}
	used("pods=1,requests.memory=1Gi")
}

func mustNamespace(t *testing.T, c kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func simplePod(name string, sc *corev1.SecurityContext) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: sc}}}}
}

// TestUpdateAdmittedBeforeValidation: an update that replaces a pod's
// tolerations gets the default ones back from admission before the pod's
// rules (only additions) are checked, as kube-apiserver orders them.
func TestUpdateAdmittedBeforeValidation(t *testing.T) {
	s := servertest.Start(t)
	pods, ctx := s.Client().CoreV1().Pods("default"), t.Context()
	pod, err := pods.Create(ctx, testPod("tolerant", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Tolerations) != 2 {
		t.Fatalf("default tolerations: %+v", pod.Spec.Tolerations)
	}
	// The scheduler may write the pod meanwhile: retry on its conflicts.
	var updated *corev1.Pod
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, "tolerant", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Tolerations = []corev1.Toleration{{Key: "extra", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
		updated, err = pods.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil || len(updated.Spec.Tolerations) != 3 || updated.Generation != 2 {
		t.Fatalf("an update replacing the tolerations: %v %+v", err, updated)
	}
}
