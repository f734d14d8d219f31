package namespace

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var all = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func TestDeletionPhases(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "secrets", Namespaced: true, Verbs: all},
			{Name: "pods", Namespaced: true, Verbs: all},
			{Name: "pods/status", Namespaced: true, Verbs: metav1.Verbs{"get", "update"}},
			{Name: "nodes", Namespaced: false, Verbs: all},
			{Name: "bindings", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			{Name: "configmaps", Namespaced: true, Verbs: all},
			{Name: "nolist", Namespaced: true, Verbs: metav1.Verbs{"delete", "deletecollection"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "replicasets", Namespaced: true, Verbs: all},
			{Name: "deployments", Namespaced: true, Verbs: all},
		}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "leases", Namespaced: true, Verbs: all},
		}},
	}
	phases, err := deletionPhases(lists)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range phases {
		var names []string
		for _, gvr := range p {
			names = append(names, gvr.GroupResource().String())
		}
		got = append(got, strings.Join(names, ","))
	}
	want := []string{"pods", "configmaps,secrets,deployments.apps,replicasets.apps,leases.coordination.k8s.io"}
	if !slices.Equal(got, want) {
		t.Errorf("phases:\n got %q\nwant %q", got, want)
	}

	_, err = deletionPhases([]*metav1.APIResourceList{{GroupVersion: "a/b/c"}})
	if err == nil {
		t.Error("a group version that does not parse gives no error")
	}
	if phases, _ := deletionPhases(nil); len(phases) != 0 {
		t.Errorf("no resources: %v", phases)
	}
}

func TestConditions(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name string
		rep  report
		want map[corev1.NamespaceConditionType]string // type → "status reason"; others all clear
		msg  map[corev1.NamespaceConditionType]string
	}{
		{name: "all clear", rep: report{}},
		{
			name: "pods remaining on finalizers",
			rep: report{
				remaining:  map[schema.GroupResource]int{pods: 2},
				finalizers: map[string]int{"example.com/hold": 1},
			},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceContentRemaining:    "True SomeResourcesRemain",
				corev1.NamespaceFinalizersRemaining: "True SomeFinalizerRemain",
			},
			msg: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceContentRemaining:    "Some resources are remaining: pods. has 2 resource instances",
				corev1.NamespaceFinalizersRemaining: "Some finalizers are remaining: example.com/hold in 1 resource instances",
			},
		},
		{
			name: "failures",
			rep:  report{discoveryErr: errors.New("boom"), failed: []string{"delete secrets: x", "delete configmaps: y"}},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceDeletionDiscoveryFailure: "True DiscoveryFailed",
				corev1.NamespaceDeletionContentFailure:   "True ContentDeletionFailed",
			},
			msg: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceDeletionContentFailure: "Failed to delete all resource types, 2 remaining: delete configmaps: y, delete secrets: x",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conditions(tt.rep)
			if len(got) != len(conditionTypes) {
				t.Fatalf("got %d conditions, want %d", len(got), len(conditionTypes))
			}
			for i, c := range got {
				if c.Type != conditionTypes[i] {
					t.Errorf("condition %d is %s, want %s", i, c.Type, conditionTypes[i])
				}
				want, ok := tt.want[c.Type]
				if !ok {
					want = "False " + allClear[c.Type].reason
				}
				if s := string(c.Status) + " " + c.Reason; s != want {
					t.Errorf("%s: got %q, want %q", c.Type, s, want)
				}
				if m, ok := tt.msg[c.Type]; ok && c.Message != m {
					t.Errorf("%s message:\n got %q\nwant %q", c.Type, c.Message, m)
				}
			}
		})
	}
}

func TestMergeConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	cond := func(typ corev1.NamespaceConditionType, status corev1.ConditionStatus, msg string, at metav1.Time) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: typ, Status: status, Reason: "R", Message: msg, LastTransitionTime: at}
	}
	remaining, other := corev1.NamespaceContentRemaining, corev1.NamespaceConditionType("Other")
	tests := []struct {
		name        string
		have, want  []corev1.NamespaceCondition
		out         []corev1.NamespaceCondition
		wantChanged bool
	}{
		{
			name:        "added",
			have:        []corev1.NamespaceCondition{cond(other, "True", "x", t0)},
			want:        []corev1.NamespaceCondition{cond(remaining, "True", "m", metav1.Time{})},
			out:         []corev1.NamespaceCondition{cond(other, "True", "x", t0), cond(remaining, "True", "m", t1)},
			wantChanged: true,
		},
		{
			name: "unchanged",
			have: []corev1.NamespaceCondition{cond(remaining, "True", "m", t0)},
			want: []corev1.NamespaceCondition{cond(remaining, "True", "m", metav1.Time{})},
			out:  []corev1.NamespaceCondition{cond(remaining, "True", "m", t0)},
		},
		{
			name:        "message changed keeps the transition time",
			have:        []corev1.NamespaceCondition{cond(remaining, "True", "m", t0)},
			want:        []corev1.NamespaceCondition{cond(remaining, "True", "n", metav1.Time{})},
			out:         []corev1.NamespaceCondition{cond(remaining, "True", "n", t0)},
			wantChanged: true,
		},
		{
			name:        "status changed moves the transition time",
			have:        []corev1.NamespaceCondition{cond(remaining, "True", "m", t0)},
			want:        []corev1.NamespaceCondition{cond(remaining, "False", "m", metav1.Time{})},
			out:         []corev1.NamespaceCondition{cond(remaining, "False", "m", t1)},
			wantChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have := slices.Clone(tt.have)
			out, changed := mergeConditions(have, tt.want, t1)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if !reflect.DeepEqual(out, tt.out) {
				t.Errorf("got %+v\nwant %+v", out, tt.out)
			}
			if !reflect.DeepEqual(have, tt.have) {
				t.Error("input modified")
			}
		})
	}
}
