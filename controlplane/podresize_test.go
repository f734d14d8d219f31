package controlplane_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodResizeSubresource: pods/resize changes a pod's containers' cpu
// and memory, bumping its generation, and nothing else; what a resize may
// not do is refused naming the field.
func TestPodResizeSubresource(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")
	pod := testPod("resized", nil)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := `{"spec":{"containers":[{"name":"c","image":"other:1","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m","memory":"128Mi"}}}]}}`
	got, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatalf("resize: %v", err)
	}
	r := got.Spec.Containers[0].Resources
	if r.Requests.Cpu().String() != "150m" || r.Limits.Cpu().String() != "300m" || r.Limits.Memory().String() != "128Mi" || r.Requests.Memory().String() != "64Mi" {
		t.Errorf("resources after resize = %v", r)
	}
	if got.Spec.Containers[0].Image != created.Spec.Containers[0].Image {
		t.Errorf("a resize changed the image to %q", got.Spec.Containers[0].Image)
	}
	if got.Generation != created.Generation+1 {
		t.Errorf("generation %d after a resize, want %d", got.Generation, created.Generation+1)
	}
	viaResize, err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/resized/resize").Do(ctx).Get()
	if err != nil || viaResize.(*corev1.Pod).ResourceVersion != got.ResourceVersion {
		t.Errorf("GET pods/resize: %v %v", viaResize, err)
	}
	for _, tc := range []struct{ patch, field string }{
		{`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":null}}}]}}`, "spec.containers[0].resources.limits"},
		{`{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`, "only cpu and memory"},
		{`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"300m","memory":"128Mi"}}}]}}`, "QOS Class"},
		{`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"400m"}}}]}}`, "spec.containers[0].resources.requests"},
	} {
		_, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "resize")
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("resize %s: %v, want Invalid naming %s", tc.patch, err, tc.field)
		}
	}
	main := got.DeepCopy()
	main.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("120m")
	if _, err := pods.Update(ctx, main, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("resources changed through the pod itself: %v, want Invalid", err)
	}
}
