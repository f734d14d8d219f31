package endpoints

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// fixture is a controller on a fake clientset whose informer stores the
// test fills by hand.
type fixture struct {
	c      *Controller
	client *fake.Clientset
	inf    informers.SharedInformerFactory
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, 0)
	c, err := newController(client, inf, record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{c: c, client: client, inf: inf}
}

// add puts objs in the informer stores (and in the fake API, for Endpoints).
func (f *fixture) add(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		var store cache.Store
		switch o := obj.(type) {
		case *corev1.Service:
			store = f.inf.Core().V1().Services().Informer().GetStore()
		case *corev1.Pod:
			store = f.inf.Core().V1().Pods().Informer().GetStore()
		case *corev1.Endpoints:
			store = f.inf.Core().V1().Endpoints().Informer().GetStore()
			if err := f.client.Tracker().Add(o); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		if err := store.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
}

// writes returns the verbs of the endpoints writes made since the last call.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource == "endpoints" && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb())
		}
	}
	f.client.ClearActions()
	return out
}

func TestSyncWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	svc := testService(svcPort("http", 80, intstr.FromString("http")))
	f.add(t, svc, testPod("a", "10.244.1.2", true), testPod("b", "10.244.1.3", false))
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 1 || w[0] != "create" {
		t.Fatalf("first sync wrote %v, want one create", w)
	}
	ep, err := f.client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ss := ep.Subsets
	if len(ss) != 1 || len(ss[0].Addresses) != 1 || ss[0].Addresses[0].IP != "10.244.1.2" ||
		len(ss[0].NotReadyAddresses) != 1 || ss[0].Ports[0].Port != 8080 {
		t.Errorf("subsets %+v", ss)
	}

	f.add(t, ep)
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("unchanged sync wrote %v", w)
	}

	f.add(t, testPod("c", "10.244.1.4", true))
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 1 || w[0] != "update" {
		t.Errorf("a new pod wrote %v, want one update", w)
	}
}

func TestSyncLeavesSelectorlessAndDeletesOrphans(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	manual := testService(svcPort("", 443, intstr.FromInt32(6443)))
	manual.Name, manual.Spec.Selector = "manual", nil
	userEndpoints := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "ns"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}}}}}
	orphan := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns"}}
	f.add(t, manual, userEndpoints, orphan, testPod("a", "10.244.1.2", true))

	if err := f.c.sync(ctx, "ns/manual"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("selectorless service: wrote %v", w)
	}
	if err := f.c.sync(ctx, "ns/gone"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 1 || w[0] != "delete" {
		t.Errorf("service gone: wrote %v, want one delete", w)
	}
	if err := f.c.sync(ctx, "ns/gone"); err != nil {
		t.Errorf("deleting missing Endpoints again: %v", err)
	}
}

func TestSyncDropsCreateInTerminatingNamespace(t *testing.T) {
	f := newFixture(t)
	f.client.PrependReactor("create", "endpoints", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errForbiddenTerminating()
	})
	f.add(t, testService(svcPort("", 80, intstr.FromInt32(8080))))
	if err := f.c.sync(context.Background(), "ns/web"); err != nil {
		t.Errorf("create refused in a terminating namespace is retried: %v", err)
	}
}

func errForbiddenTerminating() error {
	err := apierrors.NewForbidden(corev1.Resource("endpoints"), "web", errors.New("namespace ns is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return err
}

func TestPodEventsQueueMatchingServices(t *testing.T) {
	f := newFixture(t)
	other := testService()
	other.Name, other.Spec.Selector = "db", map[string]string{"app": "db"}
	none := testService()
	none.Name, none.Spec.Selector = "none", nil
	f.add(t, testService(), other, none)

	old := testPod("a", "10.244.1.2", false)
	cur := old.DeepCopy()
	cur.ResourceVersion = "2"
	cur.Status.Conditions[0].Status = corev1.ConditionTrue
	f.c.podUpdated(old, cur)
	if f.c.queue.Len() != 1 {
		t.Fatalf("queued %d services, want 1", f.c.queue.Len())
	}
	if key, _ := f.c.queue.Get(); key != "ns/web" {
		t.Errorf("queued %q", key)
	}
	f.c.queue.Done("ns/web")

	relabeled := cur.DeepCopy()
	relabeled.ResourceVersion = "3"
	relabeled.Labels = map[string]string{"app": "db"}
	f.c.podUpdated(cur, relabeled)
	if f.c.queue.Len() != 2 {
		t.Errorf("relabeled pod queued %d services, want the old and the new one", f.c.queue.Len())
	}
}
