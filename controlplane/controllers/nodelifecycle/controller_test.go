package nodelifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// fixture is a controller on a fake clientset whose informer caches the
// test fills by hand; nothing runs until the test calls a sync.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	c        *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, Config{MonitorGracePeriod: grace}, objs...)
}

func newFixtureWith(t *testing.T, cfg Config, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(100), clock: clocktesting.NewFakeClock(t0)}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	cc := component.Context{Client: f.client, Informers: f.factory,
		Recorder: func(string) record.EventRecorder { return f.recorder }}
	c, err := newController(cc, cfg, f.clock)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	for _, o := range objs {
		f.cache(o)
	}
	t.Cleanup(func() { c.nodeQueue.ShutDown(); c.cidrQueue.ShutDown(); c.podQueue.ShutDown() })
	return f
}

// cache puts obj into the controller's informer cache, as a watch would.
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Node:
		err = f.factory.Core().V1().Nodes().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	case *coordinationv1.Lease:
		err = f.factory.Coordination().V1().Leases().Informer().GetIndexer().Update(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// stored reads a node back from the fake API server.
func (f *fixture) stored(name string) *corev1.Node {
	f.t.Helper()
	n, err := f.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) syncNode(name string) {
	f.t.Helper()
	if err := f.c.syncNode(context.Background(), name); err != nil {
		f.t.Fatalf("sync node %s: %v", name, err)
	}
	f.cache(f.stored(name))
}

func (f *fixture) syncPodCIDR(name string) error {
	f.t.Helper()
	err := f.c.syncPodCIDR(context.Background(), name)
	f.cache(f.stored(name))
	return err
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) actions(verb, resource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

func readyNode(name string) *corev1.Node {
	n := testNode(readyAt(corev1.ConditionTrue, t0))
	n.Name = name
	return n
}

func TestSyncAllocatesPodCIDRs(t *testing.T) {
	held := readyNode("held")
	held.Spec.PodCIDR, held.Spec.PodCIDRs = "10.244.0.0/24", []string{"10.244.0.0/24"}
	f := newFixture(t, held, readyNode("a"), readyNode("b"))
	f.c.ipam.rebuild([]*corev1.Node{held})
	for _, name := range []string{"a", "b", "held"} {
		if err := f.syncPodCIDR(name); err != nil {
			t.Fatal(err)
		}
	}
	got := []string{f.stored("a").Spec.PodCIDR, f.stored("b").Spec.PodCIDR, f.stored("held").Spec.PodCIDR}
	if !slices.Equal(got, []string{"10.244.1.0/24", "10.244.2.0/24", "10.244.0.0/24"}) {
		t.Errorf("podCIDRs %v", got)
	}
	if cidrs := f.stored("a").Spec.PodCIDRs; !slices.Equal(cidrs, []string{"10.244.1.0/24"}) {
		t.Errorf("podCIDRs of a: %v", cidrs)
	}

	f.c.nodeDeleted(f.stored("a"))
	c, err := f.client.CoreV1().Nodes().Create(context.Background(), readyNode("c"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.cache(c)
	if err := f.syncPodCIDR("c"); err != nil {
		t.Fatal(err)
	}
	if got := f.stored("c").Spec.PodCIDR; got != "10.244.1.0/24" {
		t.Errorf("node after a deleted one got %s, want its freed 10.244.1.0/24", got)
	}
}

func TestSyncSilentNode(t *testing.T) {
	renew := metav1.NewMicroTime(t0)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{RenewTime: &renew}}
	node := readyNode("n1")
	node.Spec.PodCIDR = "10.244.3.0/24"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p-uid"},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	f := newFixture(t, node, lease, pod)

	f.syncNode("n1")
	f.clock.Step(grace - time.Second)
	f.syncNode("n1")
	if got := readyStatus(f.stored("n1")); got != corev1.ConditionTrue {
		t.Fatalf("Ready %s before the grace period ran out", got)
	}

	f.clock.Step(time.Second)
	f.syncNode("n1")
	n := f.stored("n1")
	ready := readyCondition(n)
	if ready.Status != corev1.ConditionUnknown || ready.Reason != reasonStatusUnknown || ready.Message != messageStatusUnknown {
		t.Errorf("Ready condition %+v", ready)
	}
	var exec *corev1.Taint
	for i, tt := range n.Spec.Taints {
		if tt.Key == corev1.TaintNodeUnreachable && tt.Effect == corev1.TaintEffectNoExecute {
			exec = &n.Spec.Taints[i]
		}
	}
	if exec == nil || exec.TimeAdded == nil || !exec.TimeAdded.Time.Equal(t0.Add(grace)) {
		t.Errorf("taints %+v, want unreachable:NoExecute added at +%s", n.Spec.Taints, grace)
	}
	p, _ := f.client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if c := p.Status.Conditions[0]; c.Status != corev1.ConditionFalse {
		t.Errorf("pod Ready condition %+v, want False", c)
	}
	events := strings.Join(f.events(), "\n")
	for _, want := range []string{"RegisteredNode Registered Node n1 in Controller", "NodeNotReady Node n1 status is now: NodeNotReady", "Warning NodeNotReady Node is not ready"} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q in\n%s", want, events)
		}
	}

	// The lease alone does not bring Ready back; the agent's status does.
	renewed := lease.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: f.clock.Now()}
	f.cache(renewed)
	f.syncNode("n1")
	if len(f.stored("n1").Spec.Taints) == 0 {
		t.Error("taints removed while Ready is still Unknown")
	}
	healthy := f.stored("n1")
	healthy.Status.Conditions = []corev1.NodeCondition{readyAt(corev1.ConditionTrue, f.clock.Now())}
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(context.Background(), healthy, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cache(healthy)
	f.syncNode("n1")
	if taints := f.stored("n1").Spec.Taints; len(taints) != 0 {
		t.Errorf("taints left on a Ready node: %v", taints)
	}
}

func TestSyncPodEviction(t *testing.T) {
	added := metav1.NewTime(t0)
	node := readyNode("n1")
	node.Spec.PodCIDR = "10.244.3.0/24"
	node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	two := int64(2)
	pod := func(name string, tol ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n1", Tolerations: tol}}
	}
	exists := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	forTwo := exists
	forTwo.TolerationSeconds = &two
	f := newFixture(t, node, pod("intolerant"), pod("two", forTwo), pod("forever", exists))
	ctx := context.Background()

	f.clock.Step(time.Second)
	for _, p := range []string{"intolerant", "two", "forever"} {
		if err := f.c.syncPod(ctx, "ns/"+p); err != nil {
			t.Fatal(err)
		}
	}
	if got := deleted(f); !slices.Equal(got, []string{"intolerant"}) {
		t.Errorf("deleted %v at +1s, want [intolerant]", got)
	}
	f.clock.Step(time.Second)
	for _, p := range []string{"two", "forever"} {
		if err := f.c.syncPod(ctx, "ns/"+p); err != nil {
			t.Fatal(err)
		}
	}
	if got := deleted(f); !slices.Equal(got, []string{"intolerant", "two"}) {
		t.Errorf("deleted %v at +2s, want [intolerant two]", got)
	}
	events := strings.Join(f.events(), "\n")
	if !strings.Contains(events, "TaintManagerEviction Marking for deletion Pod ns/two") {
		t.Errorf("events:\n%s", events)
	}
	if n := len(f.actions("patch", "pods")); n != 2 {
		t.Errorf("%d DisruptionTarget patches, want 2", n)
	}
}

func deleted(f *fixture) []string {
	var out []string
	for _, a := range f.actions("delete", "pods") {
		out = append(out, a.(clienttesting.DeleteAction).GetName())
	}
	return out
}
