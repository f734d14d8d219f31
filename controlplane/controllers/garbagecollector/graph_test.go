package garbagecollector

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	rsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

func rs(uid string, mutate ...func(*object)) object {
	o := object{identity: identity{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "rs-" + uid, UID: types.UID(uid)}, GVR: rsGVR}
	for _, m := range mutate {
		m(&o)
	}
	return o
}

func podOf(uid string, owners ...metav1.OwnerReference) object {
	return object{identity: identity{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "pod-" + uid, UID: types.UID(uid)},
		GVR: podGVR, Owners: owners}
}

func deletingWith(finalizer string) func(*object) {
	return func(o *object) { o.Deleting, o.Finalizers = true, []string{finalizer} }
}

// TestGraph feeds the graph informer events and checks the work each asks for.
func TestGraph(t *testing.T) {
	type event struct {
		upsert *object
		remove types.UID
		want   work
	}
	up := func(o object) *object { return &o }
	uids := func(s ...string) []types.UID {
		out := []types.UID{}
		for _, u := range s {
			out = append(out, types.UID(u))
		}
		return out
	}
	del := func(s ...string) work { return work{attemptDelete: uids(s...)} }
	cases := []struct {
		name   string
		events []event
	}{
		{"an owner seen first, then dependents: nothing to do; deleting the owner wakes them", []event{
			{upsert: up(rs("r")), want: del()},
			{upsert: up(podOf("p1", ref("r", true))), want: del()},
			{upsert: up(podOf("p2", ref("r", true))), want: del()},
			{remove: "r", want: del("p1", "p2")},
		}},
		{"a dependent seen before its owner: the virtual owner is verified", []event{
			{upsert: up(podOf("p1", ref("r", true))), want: del("r", "p1")},
			{upsert: up(rs("r")), want: del()},
			{upsert: up(podOf("p1", ref("r", true))), want: del()},
		}},
		{"foreground: the owner and its dependents, once; a blocking dependent's departure wakes the owner", []event{
			{upsert: up(rs("r")), want: del()},
			{upsert: up(podOf("p1", ref("r", true))), want: del()},
			{upsert: up(podOf("p2", ref("r", false))), want: del()},
			{upsert: up(rs("r", deletingWith(metav1.FinalizerDeleteDependents))), want: del("r", "p1", "p2")},
			{upsert: up(rs("r", deletingWith(metav1.FinalizerDeleteDependents))), want: del("r")},
			{remove: "p2", want: del("r")},
			{upsert: up(podOf("p1", ref("r", false))), want: del("r")},
		}},
		{"a new dependent of an owner deleting in the foreground is looked at", []event{
			{upsert: up(rs("r", deletingWith(metav1.FinalizerDeleteDependents))), want: del("r")},
			{upsert: up(podOf("p1", ref("r", true))), want: del("p1")},
		}},
		{"orphan: the owner is queued for orphaning on every update while it holds the finalizer", []event{
			{upsert: up(rs("r")), want: del()},
			{upsert: up(podOf("p1", ref("r", true))), want: del()},
			{upsert: up(rs("r", deletingWith(metav1.FinalizerOrphanDependents))), want: work{attemptDelete: uids(), orphan: uids("r")}},
		}},
		{"a reference to a namespaced owner in another namespace is not linked", []event{
			{upsert: up(rs("r")), want: del()},
			{upsert: up(object{identity: identity{APIVersion: "v1", Kind: "Pod", Namespace: "other", Name: "x", UID: "x"}, GVR: podGVR,
				Owners: []metav1.OwnerReference{ref("r", true)}}), want: del("x")},
			{remove: "r", want: del()},
		}},
		{"a dropped reference unlinks the dependent and forgets a virtual owner", []event{
			{upsert: up(podOf("p1", ref("r", true))), want: del("r", "p1")},
			{upsert: up(podOf("p1")), want: del()},
			{remove: "r", want: del()},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGraph()
			for i, e := range tc.events {
				var got work
				if e.upsert != nil {
					got = g.upsert(*e.upsert)
				} else {
					got = g.remove(e.remove)
				}
				normalize(&got)
				normalize(&e.want)
				if !reflect.DeepEqual(got, e.want) {
					t.Errorf("event %d: work %+v, want %+v", i, got, e.want)
				}
			}
		})
	}
}

func normalize(w *work) {
	if w.attemptDelete == nil {
		w.attemptDelete = []types.UID{}
	}
	slices.Sort(w.attemptDelete)
	w.attemptDelete = slices.Compact(w.attemptDelete)
	slices.Sort(w.orphan)
}

func TestSnapshotBlocking(t *testing.T) {
	g := newGraph()
	g.upsert(rs("r"))
	g.upsert(podOf("p1", ref("r", true)))
	g.upsert(podOf("p2", ref("r", false)))
	g.upsert(podOf("p3", ref("other", true), ref("r", true)))
	s, ok := g.get("r")
	if !ok || !s.observed || len(s.dependents) != 3 {
		t.Fatalf("snapshot %+v", s)
	}
	var names []string
	for _, d := range s.blocking() {
		names = append(names, d.id.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"pod-p1", "pod-p3"}) {
		t.Errorf("blocking %v", names)
	}
	if v, ok := g.get("other"); !ok || v.observed {
		t.Errorf("virtual owner %+v", v)
	}
}

func TestCollectableResources(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"create", "delete", "get", "list", "watch"}},
			{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch", "update"}},
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"delete", "list", "watch"}},
			{Name: "nodes", Kind: "Node", Verbs: []string{"delete", "list", "watch"}},
			{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "replicasets", Namespaced: true, Kind: "ReplicaSet", Verbs: []string{"delete", "list", "watch"}},
		}},
	}
	got := collectableResources(lists)
	want := []schema.GroupVersionResource{podGVR, {Version: "v1", Resource: "nodes"}, rsGVR}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
