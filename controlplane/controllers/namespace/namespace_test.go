package namespace

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// fakeContent holds the objects of one namespace by resource and records
// the calls made to it. deleteCollection removes the objects without
// finalizers; those with finalizers stay, as pods waiting for their node.
type fakeContent struct {
	objects map[string][]*metav1.ObjectMeta
	calls   []string
}

func (f *fakeContent) deleteCollection(_ context.Context, gvr schema.GroupVersionResource, _ string) error {
	f.calls = append(f.calls, "delete "+gvr.Resource)
	f.objects[gvr.Resource] = slices.DeleteFunc(f.objects[gvr.Resource], func(m *metav1.ObjectMeta) bool {
		return len(m.Finalizers) == 0
	})
	return nil
}

func (f *fakeContent) list(_ context.Context, gvr schema.GroupVersionResource, _ string) ([]metav1.Object, error) {
	f.calls = append(f.calls, "list "+gvr.Resource)
	var out []metav1.Object
	for _, m := range f.objects[gvr.Resource] {
		out = append(out, m)
	}
	return out, nil
}

func discoverCore() ([]*metav1.APIResourceList, error) {
	return []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Verbs: all},
		{Name: "pods", Namespaced: true, Verbs: all},
		{Name: "secrets", Namespaced: true, Verbs: all},
	}}}, nil
}

// newTestController returns a controller on a fake clientset holding objs,
// whose namespaces/finalize writes the namespace's spec.
func newTestController(t *testing.T, content content, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "finalize" {
			return false, nil, nil
		}
		ns := a.(k8stesting.CreateAction).GetObject().(*corev1.Namespace)
		return true, ns, client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("namespaces"), ns, "")
	})
	c, err := newController(client, informers.NewSharedInformerFactory(client, 0), discoverCore, content)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	return c, client
}

func testNamespace(deleted bool, finalizers ...corev1.FinalizerName) *corev1.Namespace {
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "ns"},
		Spec:       corev1.NamespaceSpec{Finalizers: finalizers},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	if deleted {
		now := metav1.Now()
		ns.DeletionTimestamp = &now
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	return ns
}

func obj(name string, finalizers ...string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: name, Namespace: "ns", Finalizers: finalizers}
}

func TestSync(t *testing.T) {
	k8s := corev1.FinalizerKubernetes
	tests := []struct {
		name           string
		ns             *corev1.Namespace
		objects        map[string][]*metav1.ObjectMeta
		wantCalls      []string
		wantWaiting    bool
		wantFinalizers []corev1.FinalizerName
		wantTrue       []corev1.NamespaceConditionType // conditions True after the sync
	}{
		{
			name:           "active namespace left alone",
			ns:             testNamespace(false, k8s),
			objects:        map[string][]*metav1.ObjectMeta{"pods": {obj("p")}},
			wantFinalizers: []corev1.FinalizerName{k8s},
		},
		{
			name:    "emptied pods first, then finalized",
			ns:      testNamespace(true, k8s),
			objects: map[string][]*metav1.ObjectMeta{"pods": {obj("p")}, "configmaps": {obj("c")}, "secrets": {obj("s")}},
			wantCalls: []string{"delete pods", "list pods", "delete configmaps", "list configmaps",
				"delete secrets", "list secrets"},
		},
		{
			name:           "remaining pods hold everything else back",
			ns:             testNamespace(true, k8s),
			objects:        map[string][]*metav1.ObjectMeta{"pods": {obj("p", "example.com/hold")}, "configmaps": {obj("c")}},
			wantCalls:      []string{"delete pods", "list pods"},
			wantWaiting:    true,
			wantFinalizers: []corev1.FinalizerName{k8s},
			wantTrue:       []corev1.NamespaceConditionType{corev1.NamespaceContentRemaining, corev1.NamespaceFinalizersRemaining},
		},
		{
			name:           "other finalizers kept",
			ns:             testNamespace(true, "example.com/x", k8s),
			wantCalls:      []string{"delete pods", "list pods", "delete configmaps", "list configmaps", "delete secrets", "list secrets"},
			wantFinalizers: []corev1.FinalizerName{"example.com/x"},
		},
		{
			name:           "already finalized",
			ns:             testNamespace(true, "example.com/x"),
			wantFinalizers: []corev1.FinalizerName{"example.com/x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := &fakeContent{objects: tt.objects}
			if content.objects == nil {
				content.objects = map[string][]*metav1.ObjectMeta{}
			}
			c, client := newTestController(t, content, tt.ns)
			ctx := context.Background()
			err := c.sync(ctx, "ns")
			if waiting := errors.Is(err, component.ErrWaiting); waiting != tt.wantWaiting || (err != nil && !waiting) {
				t.Fatalf("sync: %v, want waiting %v", err, tt.wantWaiting)
			}
			if !slices.Equal(content.calls, tt.wantCalls) {
				t.Errorf("calls:\n got %q\nwant %q", content.calls, tt.wantCalls)
			}
			ns, err := client.CoreV1().Namespaces().Get(ctx, "ns", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ns.Spec.Finalizers, tt.wantFinalizers) {
				t.Errorf("finalizers %q, want %q", ns.Spec.Finalizers, tt.wantFinalizers)
			}
			for _, cond := range ns.Status.Conditions {
				if want := slices.Contains(tt.wantTrue, cond.Type); (cond.Status == corev1.ConditionTrue) != want {
					t.Errorf("condition %s is %s: %s", cond.Type, cond.Status, cond.Message)
				}
			}
		})
	}
}

func TestPodDeletionRequeuesTerminatingNamespace(t *testing.T) {
	c, _ := newTestController(t, &fakeContent{}, testNamespace(true, corev1.FinalizerKubernetes))
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	store := inf.Core().V1().Namespaces().Informer().GetStore()
	c.lister = inf.Core().V1().Namespaces().Lister()
	if err := store.Add(testNamespace(true, corev1.FinalizerKubernetes)); err != nil {
		t.Fatal(err)
	}
	c.podDeleted(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "other"}})
	if c.queue.Len() != 0 {
		t.Fatalf("a pod of an unknown namespace queued it")
	}
	c.podDeleted(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	if key, _ := c.queue.Get(); key != "ns" {
		t.Errorf("queued %q, want ns", key)
	}
}
