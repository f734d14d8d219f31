package controlplane

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// backoffWindow is how long each component runs against an API server
// that refuses every write. With exponential back-off from 5 ms a key is
// tried about a dozen times in it; a hot loop would try it thousands of
// times.
const (
	backoffWindow       = 3 * time.Second
	maxAttemptsInWindow = 20
)

// TestComponentsBackOff runs each component the control plane runs on a
// fake API server whose every write fails, with one object that needs a
// write, and counts the writes it tries: more than one (it retries) and no
// more than exponential back-off allows.
func TestComponentsBackOff(t *testing.T) {
	labels := map[string]string{"app": "x"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	tests := []struct {
		component string
		objects   []runtime.Object
		write     string // the refused write: verb resource[/subresource]
	}{
		{"replicaset", []runtime.Object{&appsv1.ReplicaSet{ObjectMeta: meta("rs"),
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: selector, Template: template}}}, "create pods"},
		{"replicationcontroller", []runtime.Object{&corev1.ReplicationController{ObjectMeta: meta("rc"),
			Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1), Selector: labels, Template: &template}}}, "create pods"},
		{"deployment", []runtime.Object{&appsv1.Deployment{ObjectMeta: meta("d"),
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: selector, Template: template}}}, "create replicasets"},
		{"endpoints", []runtime.Object{&corev1.Service{ObjectMeta: meta("svc"),
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}}, "create endpoints"},
		{"serviceaccount", []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}}, "create serviceaccounts"},
		{"namespace", []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: ptr.To(metav1.Now())},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}}, "create namespaces/finalize"},
		{"nodelifecycle", []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}, "patch nodes"},
		{"scheduler", []runtime.Object{readyTestNode("n"), &corev1.Pod{ObjectMeta: meta("p"), Spec: scheduled(template.Spec)}}, "create pods/binding"},
		{"garbagecollector", []runtime.Object{&corev1.Pod{ObjectMeta: ownedBy(meta("orphaned"), "gone"), Spec: template.Spec}}, "delete pods"},
		{"podgc", []runtime.Object{&corev1.Pod{ObjectMeta: meta("orphan"), Spec: corev1.PodSpec{NodeName: "missing", Containers: template.Spec.Containers}}},
			"patch pods/status"},
	}
	for _, tt := range tests {
		t.Run(tt.component, func(t *testing.T) {
			t.Parallel()
			writes := runAgainstRefusingServer(t, tt.component, tt.objects)
			n := writes[tt.write]
			if n < 2 || n > maxAttemptsInWindow {
				t.Errorf("%s tried %q %d times in %s; want 2 to %d (writes: %v)", tt.component, tt.write, n, backoffWindow, maxAttemptsInWindow, writes)
			}
		})
	}
}

// runAgainstRefusingServer runs one component for backoffWindow on a fake
// clientset holding objects that refuses every write, and returns how
// often each write was tried.
func runAgainstRefusingServer(t *testing.T, name string, objects []runtime.Object) map[string]int {
	client := fake.NewClientset(objects...)
	client.Resources = backoffResources
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, objects...)
	var mu sync.Mutex
	writes := map[string]int{}
	refuse := func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			return false, nil, nil
		}
		key := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			key += "/" + sub
		}
		mu.Lock()
		writes[key]++
		mu.Unlock()
		return true, nil, errors.New("refused")
	}
	client.PrependReactor("*", "*", refuse)
	dyn.PrependReactor("*", "*", refuse)
	cc := component.Context{Client: discoveringClient{client}, Dynamic: dyn, Metadata: metadataClient(t, objects),
		Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder:  func(string) record.EventRecorder { return &record.FakeRecorder{} }}
	p, ok := parts(Config{NodeMonitorGracePeriod: 100 * time.Millisecond})[name]
	if !ok {
		t.Fatalf("no component %s", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), backoffWindow)
	defer cancel()
	if err := component.Run(ctx, cc, map[string]component.Constructor{name: p.build}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return writes
}

// backoffResources is what the fake API's discovery lists (the garbage
// collector watches what discovery lists).
var backoffResources = []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "watch", "delete"}}}},
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "replicasets", Namespaced: true, Kind: "ReplicaSet", Verbs: metav1.Verbs{"get", "list", "watch", "delete"}}}},
}

// discoveringClient is the fake clientset with a discovery that also
// answers ServerPreferredResources (client-go's fake leaves it empty).
type discoveringClient struct{ *fake.Clientset }

func (c discoveringClient) Discovery() discovery.DiscoveryInterfaces {
	return preferredDiscovery{c.Clientset.Discovery().(*fakediscovery.FakeDiscovery)}
}

type preferredDiscovery struct{ *fakediscovery.FakeDiscovery }

func (d preferredDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.Resources, nil
}

// metadataClient is a fake metadata client holding objects' metadata.
func metadataClient(t *testing.T, objects []runtime.Object) *metadatafake.FakeMetadataClient {
	var partial []runtime.Object
	for _, obj := range objects {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		m := obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
		partial = append(partial, &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: gvks[0].GroupVersion().String(), Kind: gvks[0].Kind},
			ObjectMeta: *m})
	}
	s := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		t.Fatal(err)
	}
	return metadatafake.NewSimpleMetadataClient(s, partial...)
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}
}

func readyTestNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// ownedBy is m with a controller reference to ReplicaSet owner, which
// does not exist.
func ownedBy(m metav1.ObjectMeta, owner string) metav1.ObjectMeta {
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID("uid-" + owner),
		Controller: ptr.To(true)}}
	return m
}

// scheduled is spec as the API server defaults it for the default scheduler.
func scheduled(spec corev1.PodSpec) corev1.PodSpec {
	spec.SchedulerName = corev1.DefaultSchedulerName
	return spec
}
