package garbagecollector

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ref(uid string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + uid, UID: types.UID(uid), BlockOwnerDeletion: &block}
}

func TestDecide(t *testing.T) {
	const (
		bg   = metav1.DeletePropagationBackground
		fg   = metav1.DeletePropagationForeground
		orph = metav1.DeletePropagationOrphan
	)
	uids := func(s ...string) []types.UID {
		var out []types.UID
		for _, u := range s {
			out = append(out, types.UID(u))
		}
		return out
	}
	cases := []struct {
		name              string
		owners            []owner
		finalizers        []string
		hasDependents     bool
		dependentDeleting bool
		want              plan
	}{
		{name: "owner exists: nothing", owners: []owner{{ref("a", true), solid}}, want: plan{}},
		{name: "only owner gone: delete in the background", owners: []owner{{ref("a", true), dangling}},
			want: plan{delete: true, policy: bg}},
		{name: "one of two owners gone: drop its reference", owners: []owner{{ref("a", true), dangling}, {ref("b", false), solid}},
			want: plan{removeRefs: uids("a")}},
		{name: "all of several owners gone: delete", owners: []owner{{ref("a", true), dangling}, {ref("b", false), dangling}},
			want: plan{delete: true, policy: bg}},
		{name: "a solid owner beside one deleting in the foreground: drop the waiting reference",
			owners: []owner{{ref("a", true), waiting}, {ref("b", true), solid}, {ref("c", false), dangling}},
			want:   plan{removeRefs: uids("c", "a")}},
		{name: "owner deleting in the foreground, no dependents: delete in the background",
			owners: []owner{{ref("a", true), waiting}}, want: plan{delete: true, policy: bg}},
		{name: "owner deleting in the foreground, with dependents: delete in the foreground",
			owners: []owner{{ref("a", true), waiting}}, hasDependents: true, want: plan{delete: true, policy: fg}},
		{name: "a dependent deleting in the foreground too: unblock the owner first",
			owners:        []owner{{ref("a", true), waiting}, {ref("b", false), waiting}, {ref("c", true), dangling}},
			hasDependents: true, dependentDeleting: true,
			want: plan{unblockRefs: uids("a"), delete: true, policy: fg}},
		{name: "the object's own orphan finalizer decides its propagation",
			owners: []owner{{ref("a", true), dangling}}, finalizers: []string{metav1.FinalizerOrphanDependents},
			want: plan{delete: true, policy: orph}},
		{name: "the object's own foregroundDeletion finalizer decides its propagation",
			owners: []owner{{ref("a", true), dangling}}, finalizers: []string{"example.com/x", metav1.FinalizerDeleteDependents},
			want: plan{delete: true, policy: fg}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.owners, tc.finalizers, tc.hasDependents, tc.dependentDeleting)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRefEdits(t *testing.T) {
	refs := []metav1.OwnerReference{ref("a", true), ref("b", true), ref("c", false)}
	if got := withoutRefs(refs, []types.UID{"a", "c"}); len(got) != 1 || got[0].UID != "b" {
		t.Errorf("withoutRefs: %v", got)
	}
	got := unblocked(refs, []types.UID{"b"})
	if *got[1].BlockOwnerDeletion || !*got[0].BlockOwnerDeletion || !*refs[1].BlockOwnerDeletion {
		t.Errorf("unblocked: %v (input %v)", got, refs)
	}
	fs := []string{metav1.FinalizerOrphanDependents, "example.com/x"}
	if got := withoutFinalizer(fs, metav1.FinalizerOrphanDependents); !reflect.DeepEqual(got, []string{"example.com/x"}) || len(fs) != 2 {
		t.Errorf("withoutFinalizer: %v", got)
	}
}
