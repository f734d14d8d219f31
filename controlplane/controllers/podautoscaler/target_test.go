package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
)

// TestTargets reads and sets a Deployment's scale through the dynamic
// client, finding the resource by discovery.
func TestTargets(t *testing.T) {
	disc := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Kind: "Deployment", Namespaced: true},
		{Name: "deployments/scale", Kind: "Scale", Group: "autoscaling", Version: "v1", Namespaced: true}}}}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var updated *unstructured.Unstructured
	dyn.PrependReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "namespace": "ns", "resourceVersion": "7"},
			"spec":     map[string]any{"replicas": int64(2)}, "status": map[string]any{"replicas": int64(2), "selector": "app=web"}}}, nil
	})
	dyn.PrependReactor("update", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		updated = a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		return true, updated, nil
	})
	tg := &targets{dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}

	scale, gvr, err := tg.scaleOf(t.Context(), "ns", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}); gvr != want ||
		scale.Spec.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Fatalf("scaleOf = %+v at %v", scale, gvr)
	}
	if err := tg.setReplicas(t.Context(), gvr, scale, 5); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(updated.Object, "spec", "replicas")
	if updated.GetKind() != "Scale" || updated.GetResourceVersion() != "7" || replicas != 5 {
		t.Errorf("updated %v", updated.Object)
	}
	if _, _, err := tg.scaleOf(t.Context(), "ns", autoscalingv2.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w"}); err == nil {
		t.Error("scaleOf an unknown kind: no error")
	}
}

// TestResourceMetrics lists PodMetrics by label selector and decodes them.
func TestResourceMetrics(t *testing.T) {
	podMetrics := func(name, app string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
			"metadata":  map[string]any{"name": name, "namespace": "ns", "labels": map[string]any{"app": app}},
			"timestamp": "2030-01-01T12:00:00Z", "window": "10s",
			"containers": []any{map[string]any{"name": "app", "usage": map[string]any{"cpu": "250m", "memory": "64Mi"}}}}}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podMetricsResource: "PodMetricsList"})
	for _, m := range []*unstructured.Unstructured{podMetrics("a", "web"), podMetrics("b", "db")} {
		// PodMetrics are served as "pods", which the tracker cannot guess.
		if err := dyn.Tracker().Create(podMetricsResource, m, "ns"); err != nil {
			t.Fatal(err)
		}
	}
	list, err := resourceMetrics{dyn}.podMetrics(t.Context(), "ns", labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "a" || list[0].Window.Duration != 10*time.Second || !list[0].Timestamp.Time.Equal(t0) {
		t.Fatalf("podMetrics = %+v", list)
	}
	if got := samplesOf(list, corev1.ResourceCPU, ""); got["a"].value != 250 {
		t.Errorf("samples = %+v", got)
	}
}
