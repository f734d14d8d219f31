package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

var (
	claimT0     = metav1.NewTime(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	claimLabels = map[string]string{"app": "web"}
	rsKind      = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

func claimOwner(opts ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"}}
	for _, o := range opts {
		o(rs)
	}
	return rs
}

func claimPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: claimLabels}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestDecideClaim(t *testing.T) {
	rs := claimOwner()
	dying := claimOwner(func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = &claimT0 })
	ownedBy := func(owner *appsv1.ReplicaSet) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(owner, rsKind))
		}
	}
	ownedByOther := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "x-uid", Controller: new(true)}}
	}
	relabelled := func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &claimT0 }
	elsewhere := func(p *corev1.Pod) { p.Namespace = "elsewhere" }
	nonController := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}}
	}
	tests := []struct {
		name  string
		owner *appsv1.ReplicaSet
		obj   *corev1.Pod
		want  Claim
	}{
		{"ours and matching", rs, claimPod("p", ownedBy(rs)), ClaimKeep},
		{"ours, no longer matching", rs, claimPod("p", ownedBy(rs), relabelled), ClaimRelease},
		{"ours, no longer matching, owner being deleted", dying, claimPod("p", ownedBy(dying), relabelled), ClaimIgnore},
		{"ours and matching, owner being deleted", dying, claimPod("p", ownedBy(dying)), ClaimKeep},
		{"another controller's", rs, claimPod("p", ownedByOther), ClaimIgnore},
		{"matching orphan", rs, claimPod("p"), ClaimAdopt},
		{"orphan not matching", rs, claimPod("p", relabelled), ClaimIgnore},
		{"orphan, owner being deleted", dying, claimPod("p"), ClaimIgnore},
		{"orphan being deleted", rs, claimPod("p", deleting), ClaimIgnore},
		{"orphan in another namespace", rs, claimPod("p", elsewhere), ClaimIgnore},
		{"orphan with a non-controller owner", rs, claimPod("p", nonController), ClaimAdopt},
	}
	selector := labels.SelectorFromSet(claimLabels)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideClaim(tt.owner, selector, tt.obj); got != tt.want {
				t.Errorf("DecideClaim = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClaimPatches applies the patches as the API server does and checks
// the owner references they leave.
func TestClaimPatches(t *testing.T) {
	rs := claimOwner()
	cmRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	pod := claimPod("p", func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{cmRef} })

	adopted := applyStrategic(t, pod, AdoptPatch(rs, rsKind, pod.UID))
	ref := *metav1.NewControllerRef(rs, rsKind)
	if !equalRefs(adopted.OwnerReferences, []metav1.OwnerReference{cmRef, ref}) {
		t.Errorf("after adoption: %+v, want %+v and %+v", adopted.OwnerReferences, cmRef, ref)
	}
	if !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("adopted ref %+v is no blocking controller ref", ref)
	}

	released := applyStrategic(t, adopted, ReleasePatch(rs.UID, pod.UID))
	if !equalRefs(released.OwnerReferences, []metav1.OwnerReference{cmRef}) {
		t.Errorf("after release: %+v, want only %+v", released.OwnerReferences, cmRef)
	}
	if got, want := string(ReleasePatch("d-uid", "rs-uid")), `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"d-uid"}],"uid":"rs-uid"}}`; got != want {
		t.Errorf("release patch %s, want %s", got, want)
	}
}

func applyStrategic(t *testing.T, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	orig, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.Pod{})
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	var patched corev1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		t.Fatal(err)
	}
	if patched.UID != pod.UID {
		t.Errorf("patch changed the uid to %q", patched.UID)
	}
	return &patched
}

// equalRefs compares owner references in any order.
func equalRefs(a, b []metav1.OwnerReference) bool {
	byUID := func(x, y metav1.OwnerReference) int { return strings.Compare(string(x.UID), string(y.UID)) }
	a, b = slices.SortedFunc(slices.Values(a), byUID), slices.SortedFunc(slices.Values(b), byUID)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestClaim checks the loop: the owner is read afresh once, before the
// first adoption only; gone objects are no error; a failed recheck stops
// adoption but not keeping and releasing.
func TestClaim(t *testing.T) {
	rs := claimOwner()
	ours := func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)} }
	relabelled := func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }
	pods := []*corev1.Pod{
		claimPod("keep", ours),
		claimPod("release", ours, relabelled),
		claimPod("release-gone", ours, relabelled),
		claimPod("adopt"),
		claimPod("adopt-gone"),
		claimPod("adopt-fails"),
		claimPod("ignore", relabelled),
	}
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name      string
		fresh     *appsv1.ReplicaSet
		getErr    error
		wantOwned []string
		wantErr   []string
		wantGets  int
	}{
		{name: "owner still there", fresh: rs, wantOwned: []string{"keep", "adopt"}, wantErr: []string{"adopt pod adopt-fails: boom"}, wantGets: 1},
		{name: "owner replaced", fresh: claimOwner(func(rs *appsv1.ReplicaSet) { rs.UID = "new" }),
			wantOwned: []string{"keep"}, wantErr: []string{"replicaset default/web is gone: uid new, want rs-uid"}, wantGets: 1},
		{name: "owner being deleted", fresh: claimOwner(func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = &claimT0 }),
			wantOwned: []string{"keep"}, wantErr: []string{"replicaset default/web is being deleted, cannot adopt pods"}, wantGets: 1},
		{name: "recheck fails", getErr: errors.New("down"),
			wantOwned: []string{"keep"}, wantErr: []string{"recheck replicaset before adopting: down"}, wantGets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gets := 0
			var patched []string
			c := Claimer[*corev1.Pod]{
				Owner: rs, OwnerKind: rsKind, Selector: labels.SelectorFromSet(claimLabels),
				OwnerNoun: "replicaset", Noun: "pod",
				Get: func(context.Context) (metav1.Object, error) {
					gets++
					return tt.fresh, tt.getErr
				},
				Patch: func(_ context.Context, p *corev1.Pod, patch []byte) (*corev1.Pod, error) {
					patched = append(patched, p.Name)
					switch p.Name {
					case "release-gone", "adopt-gone":
						return nil, apierrors.NewNotFound(gr, p.Name)
					case "adopt-fails":
						return nil, errors.New("boom")
					}
					return applyStrategic(t, p, patch), nil
				},
			}
			owned, err := c.Claim(context.Background(), pods)
			var names []string
			for _, p := range owned {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tt.wantOwned) {
				t.Errorf("owned %v, want %v (patched %v)", names, tt.wantOwned, patched)
			}
			for _, p := range owned {
				if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.UID != rs.UID {
					t.Errorf("owned pod %s has controller %v", p.Name, ref)
				}
			}
			var msgs []string
			if err != nil {
				msgs = strings.Split(err.Error(), "\n")
			}
			if !slices.Equal(msgs, tt.wantErr) {
				t.Errorf("error %q, want %q", msgs, tt.wantErr)
			}
			if gets != tt.wantGets {
				t.Errorf("owner read %d times, want %d", gets, tt.wantGets)
			}
		})
	}
}
