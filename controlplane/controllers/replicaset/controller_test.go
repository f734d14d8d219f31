package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// fixture is a controller on a fake clientset whose informer caches the
// test fills by hand; nothing runs until the test calls sync.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	c        *Controller
	recorder *record.FakeRecorder
	factory  informers.SharedInformerFactory
	now      time.Time
	creates  atomic.Int32
	failAt   int32 // the create call that starts failing, 0 for none
}

func newFixture(t *testing.T, rs *appsv1.ReplicaSet, pods ...*corev1.Pod) *fixture {
	t.Helper()
	return newFixtureOf(t, replicaSetKind, rs, pods...)
}

// newFixtureOf is a fixture for the controller of one kind, with owner
// (of that kind) and pods in the API and in the caches.
func newFixtureOf(t *testing.T, kindOf func(kubernetes.Interface, informers.SharedInformerFactory) kind, owner runtime.Object, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{owner}
	for _, p := range pods {
		objs = append(objs, p)
	}
	f := &fixture{t: t, client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(1000), now: t0}
	f.client.PrependReactor("create", "pods", f.createPod)
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	c, err := newController(kindOf(f.client, f.factory), f.client, f.factory, f.recorder, func() time.Time { return f.now })
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if err := c.informer.GetIndexer().Add(owner); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		f.cachePod(p)
	}
	return f
}

// createPod names pods as the API server does and fails creates from the
// failAt-th on.
func (f *fixture) createPod(action clienttesting.Action) (bool, runtime.Object, error) {
	n := f.creates.Add(1)
	if f.failAt != 0 && n >= f.failAt {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))
	}
	pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	if pod.Name == "" {
		pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, n)
		pod.UID = types.UID(pod.Name + "-uid")
	}
	return false, nil, nil
}

func (f *fixture) cacheRS(rs *appsv1.ReplicaSet) {
	if err := f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rs); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) cachePod(p *corev1.Pod) {
	if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
		f.t.Fatal(err)
	}
}

// observeCreated feeds the pods the controller created into the cache and
// through the add handler, as the informer would.
func (f *fixture) observeCreated() []*corev1.Pod {
	f.t.Helper()
	list, err := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if _, exists, _ := f.factory.Core().V1().Pods().Informer().GetIndexer().Get(p); !exists {
			f.cachePod(p)
			f.c.podAdded(p)
			pods = append(pods, p)
		}
	}
	return pods
}

func (f *fixture) sync() error {
	f.client.ClearActions()
	return f.c.sync(context.Background(), "ns/web")
}

// actions lists the client calls of the last sync as "verb resource[/sub] name".
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		switch a := a.(type) {
		case clienttesting.GetAction:
			s += " " + a.GetName()
		case clienttesting.PatchAction:
			s += " " + a.GetName()
		case clienttesting.DeleteAction:
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	return out
}

func (f *fixture) countActions(prefix string) int {
	n := 0
	for _, a := range f.actions() {
		if strings.HasPrefix(a, prefix) {
			n++
		}
	}
	return n
}

// events drains the recorded events.
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

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// lastStatus is the status the last sync wrote, nil if it wrote none.
func (f *fixture) lastStatus() *appsv1.ReplicaSetStatus {
	var st *appsv1.ReplicaSetStatus
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			st = &u.GetObject().(*appsv1.ReplicaSet).Status
		}
	}
	return st
}

func TestSyncCreatesAndWaitsForObservation(t *testing.T) {
	f := newFixture(t, newRS(5))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.countActions("create pods"); n != 5 {
		t.Fatalf("created %d pods, want 5: %v", n, f.actions())
	}
	events := f.events()
	if n := countPrefix(events, "Normal SuccessfulCreate Created pod: web-"); n != 5 {
		t.Errorf("events %v, want 5 SuccessfulCreate", events)
	}
	if st := f.lastStatus(); st == nil || st.Replicas != 0 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v, want 0 replicas at generation 1", st)
	}

	// Nothing observed yet: a second sync must not create again.
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.countActions("create pods"); n != 0 {
		t.Fatalf("created %d more pods before observing the first ones", n)
	}

	created := f.observeCreated()
	for _, p := range created {
		ref := metav1.GetControllerOf(p)
		if !strings.HasPrefix(p.Name, "web-") || ref == nil || ref.UID != "rs-uid" || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s has owner %+v", p.Name, ref)
		}
	}
	if !f.c.expectations.Satisfied("ns/web") {
		t.Fatal("expectations unsatisfied after observing every create")
	}
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.countActions("create pods"); n != 0 {
		t.Errorf("created %d pods with 5 of 5 running", n)
	}
	if st := f.lastStatus(); st == nil || st.Replicas != 5 || st.FullyLabeledReplicas != 5 {
		t.Errorf("status %+v, want 5 replicas", st)
	}
}

func TestSyncCreateFailure(t *testing.T) {
	f := newFixture(t, newRS(10))
	f.failAt = 4 // batches 1, 2, then 4 with one failure
	err := f.sync()
	if err == nil || !apierrors.IsForbidden(err) {
		t.Fatalf("sync err = %v, want the create error", err)
	}
	if n := f.creates.Load(); n != 7 {
		t.Errorf("%d create calls, want 7", n)
	}
	events := f.events()
	if countPrefix(events, "Normal SuccessfulCreate") != 3 || countPrefix(events, "Warning FailedCreate Error creating:") != 4 {
		t.Errorf("events %v, want 3 created and 4 failed", events)
	}
	st := f.lastStatus()
	if st == nil {
		t.Fatal("no status written")
	}
	cond := findCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure)
	if cond == nil || cond.Reason != reasonFailedCreate || !strings.Contains(cond.Message, "exceeded quota") {
		t.Errorf("ReplicaFailure condition %+v", cond)
	}

	// The 3 successes are awaited, the failures and skipped ones not.
	f.observeCreated()
	if !f.c.expectations.Satisfied("ns/web") {
		t.Fatal("expectations unsatisfied after observing the 3 creates")
	}
	f.failAt = 0
	rs := newRS(10)
	rs.Status = *st
	f.cacheRS(rs)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.countActions("create pods"); n != 7 {
		t.Errorf("created %d pods, want the missing 7", n)
	}
	if st := f.lastStatus(); st == nil || findCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure) != nil {
		t.Errorf("ReplicaFailure not cleared: %+v", st)
	}
}

func TestSyncDeletesSurplus(t *testing.T) {
	rs := newRS(2)
	f := newFixture(t, rs,
		newPod("running-old", ownedBy(rs), onNode("n1"), readyAt(t0.Add(-time.Hour))),
		newPod("unassigned", ownedBy(rs)),
		newPod("running-new", ownedBy(rs), onNode("n1"), readyAt(t0.Add(-time.Minute))),
		newPod("pending", ownedBy(rs), onNode("n1")),
	)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	deleted := slices.Sorted(slices.Values(filterPrefix(f.actions(), "delete pods ")))
	if want := []string{"delete pods pending", "delete pods unassigned"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	events := f.events()
	if countPrefix(events, "Normal SuccessfulDelete Deleted pod: ") != 2 {
		t.Errorf("events %v, want 2 SuccessfulDelete", events)
	}
	if f.c.expectations.Satisfied("ns/web") {
		t.Fatal("expectations satisfied before the deletes were observed")
	}
	if err := f.sync(); err != nil || f.countActions("delete pods") != 0 {
		t.Fatalf("second sync deleted again (err %v): %v", err, f.actions())
	}
	f.c.podUpdated(newPod("pending", ownedBy(rs), onNode("n1")), newPod("pending", ownedBy(rs), onNode("n1"), deleting, func(p *corev1.Pod) { p.ResourceVersion = "2" }))
	f.c.podDeleted(newPod("unassigned", ownedBy(rs)))
	if !f.c.expectations.Satisfied("ns/web") {
		t.Error("expectations unsatisfied after observing both deletes")
	}
}

func TestSyncAdoptsAndReleases(t *testing.T) {
	rs := newRS(2)
	f := newFixture(t, rs,
		newPod("orphan"),
		newPod("relabelled", ownedBy(rs), labelled(map[string]string{"app": "other"})),
		newPod("theirs", ownedByOther),
	)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	got := f.actions()
	for _, want := range []string{"get replicasets web", "patch pods orphan", "patch pods relabelled"} {
		if !slices.Contains(got, want) {
			t.Errorf("actions %v lack %q", got, want)
		}
	}
	if n := f.countActions("create pods"); n != 1 {
		t.Errorf("created %d pods, want 1 beside the adopted orphan", n)
	}
	if n := f.countActions("patch pods theirs") + f.countActions("delete pods"); n != 0 {
		t.Errorf("touched other pods: %v", got)
	}
	orphan, err := f.client.CoreV1().Pods("ns").Get(context.Background(), "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(orphan); ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || !*ref.BlockOwnerDeletion {
		t.Errorf("orphan owner %+v", ref)
	}
	released, err := f.client.CoreV1().Pods("ns").Get(context.Background(), "relabelled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(released.OwnerReferences) != 0 {
		t.Errorf("released pod still has owners %+v", released.OwnerReferences)
	}
}

func TestSyncDoesNotAdoptForDeletedReplicaSet(t *testing.T) {
	rs := newRS(2)
	f := newFixture(t, rs, newPod("orphan"))
	// The cache is stale: the API server has a new ReplicaSet of that name.
	fresh := newRS(2)
	fresh.UID = "new-uid"
	if _, err := f.client.AppsV1().ReplicaSets("ns").Update(context.Background(), fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("sync err = %v, want the recheck failure", err)
	}
	if n := f.countActions("patch pods") + f.countActions("create pods"); n != 0 {
		t.Errorf("acted for a replaced ReplicaSet: %v", f.actions())
	}
}

func TestSyncReplicaSetBeingDeleted(t *testing.T) {
	rs := newRS(3)
	rs.DeletionTimestamp = new(metav1.NewTime(t0))
	f := newFixture(t, rs, newPod("orphan"), newPod("mine", ownedBy(rs), readyAt(t0)))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.actions(); !slices.Equal(got, []string{"update replicasets/status"}) {
		t.Errorf("actions %v, want only the status update", got)
	}
	if st := f.lastStatus(); st == nil || st.Replicas != 1 || st.ReadyReplicas != 1 {
		t.Errorf("status %+v, want 1 ready replica", st)
	}
}

func TestSyncWritesUnchangedStatusNot(t *testing.T) {
	rs := newRS(1)
	pod := newPod("mine", ownedBy(rs), readyAt(t0))
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		ObservedGeneration: 1, TerminatingReplicas: new(int32(0)),
	}
	f := newFixture(t, rs, pod)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.actions(); len(got) != 0 {
		t.Errorf("actions %v, want none", got)
	}
}

func TestPodHandlersEnqueue(t *testing.T) {
	rs := newRS(1)
	f := newFixture(t, rs)
	other := newRS(1)
	other.Name, other.UID = "other", "other-uid"
	other.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	f.cacheRS(other)
	tests := []struct {
		name string
		do   func()
		want []string
	}{
		{name: "owned pod", do: func() { f.c.podAdded(newPod("p", ownedBy(rs))) }, want: []string{"ns/web"}},
		{name: "orphan wakes every match", do: func() { f.c.podAdded(newPod("p")) }, want: []string{"ns/other", "ns/web"}},
		{name: "pod of an unknown controller", do: func() { f.c.podAdded(newPod("p", ownedByOther)) }},
		{name: "owned pod deleted", do: func() { f.c.podDeleted(newPod("p", ownedBy(rs))) }, want: []string{"ns/web"}},
		{name: "orphan deleted", do: func() { f.c.podDeleted(newPod("p")) }},
		{
			name: "released pod wakes old owner and matching",
			do: func() {
				old := newPod("p", ownedBy(rs))
				cur := newPod("p", labelled(map[string]string{"tier": "front"}), func(p *corev1.Pod) { p.ResourceVersion = "2" })
				f.c.podUpdated(old, cur)
			},
			want: []string{"ns/other", "ns/web"},
		},
		{name: "resync", do: func() { f.c.podUpdated(newPod("p", ownedBy(rs)), newPod("p", ownedBy(rs))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do()
			var got []string
			for f.c.queue.Len() > 0 {
				key, _ := f.c.queue.Get()
				f.c.queue.Done(key)
				f.c.queue.Forget(key)
				got = append(got, key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("queued %v, want %v", got, tt.want)
			}
		})
	}
}

func filterPrefix(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}
