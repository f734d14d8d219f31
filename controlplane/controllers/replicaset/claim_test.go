package replicaset

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func TestDecideClaim(t *testing.T) {
	rs := newRS(1)
	dying := newRS(1)
	dying.DeletionTimestamp = new(metav1.NewTime(t0))
	other := map[string]string{"app": "other"}
	otherNamespace := func(p *corev1.Pod) { p.Namespace = "elsewhere" }
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		pod  *corev1.Pod
		want claim
	}{
		{name: "ours and matching", rs: rs, pod: newPod("p", ownedBy(rs)), want: claimKeep},
		{name: "ours, no longer matching", rs: rs, pod: newPod("p", ownedBy(rs), labelled(other)), want: claimRelease},
		{name: "ours, no longer matching, rs being deleted", rs: dying, pod: newPod("p", ownedBy(dying), labelled(other)), want: claimIgnore},
		{name: "ours and matching, rs being deleted", rs: dying, pod: newPod("p", ownedBy(dying)), want: claimKeep},
		{name: "another controller's", rs: rs, pod: newPod("p", ownedByOther), want: claimIgnore},
		{name: "matching orphan", rs: rs, pod: newPod("p"), want: claimAdopt},
		{name: "orphan not matching", rs: rs, pod: newPod("p", labelled(other)), want: claimIgnore},
		{name: "orphan, rs being deleted", rs: dying, pod: newPod("p"), want: claimIgnore},
		{name: "orphan being deleted", rs: rs, pod: newPod("p", deleting), want: claimIgnore},
		{name: "orphan in another namespace", rs: rs, pod: newPod("p", otherNamespace), want: claimIgnore},
		{
			name: "orphan with a non-controller owner", rs: rs, want: claimAdopt,
			pod: newPod("p", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}}
			}),
		},
	}
	selector := labels.SelectorFromSet(testLabels)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideClaim(tt.rs, selector, tt.pod); got != tt.want {
				t.Errorf("decideClaim = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClaimPatches applies the patches as the API server does and checks
// the owner references they leave.
func TestClaimPatches(t *testing.T) {
	rs := newRS(1)
	cmRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
	pod := newPod("p", func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{cmRef} })

	adopt, err := adoptPatch(rs, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	adopted := applyStrategic(t, pod, adopt)
	want := []metav1.OwnerReference{cmRef, *metav1.NewControllerRef(rs, controllerKind)}
	if !equalRefs(adopted.OwnerReferences, want) {
		t.Errorf("after adoption: %+v, want %+v", adopted.OwnerReferences, want)
	}

	release, err := releasePatch(rs.UID, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	released := applyStrategic(t, adopted, release)
	if !equalRefs(released.OwnerReferences, []metav1.OwnerReference{cmRef}) {
		t.Errorf("after release: %+v, want only %+v", released.OwnerReferences, cmRef)
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
