package deployment

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestDecideClaim(t *testing.T) {
	d := newDeployment(1, "", "")
	gone := newDeployment(1, "", "", func(d *appsv1.Deployment) { d.DeletionTimestamp = new(metav1.NewTime(t0)) })
	ours := func(rs *appsv1.ReplicaSet) {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)}
	}
	theirs := func(rs *appsv1.ReplicaSet) {
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "x-uid", Controller: new(true)}}
	}
	relabelled := func(rs *appsv1.ReplicaSet) { rs.Labels = map[string]string{"app": "db"} }
	deleting := func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = new(metav1.NewTime(t0)) }
	elsewhere := func(rs *appsv1.ReplicaSet) { rs.Namespace = "other" }
	tests := []struct {
		name string
		d    *appsv1.Deployment
		rs   *appsv1.ReplicaSet
		want claim
	}{
		{"ours and matching", d, testRS("a", 1, 0, ours), claimKeep},
		{"ours, no longer matching", d, testRS("a", 1, 0, ours, relabelled), claimRelease},
		{"ours, not matching, deployment being deleted", gone, testRS("a", 1, 0, ours, relabelled), claimIgnore},
		{"another controller's", d, testRS("a", 1, 0, theirs), claimIgnore},
		{"matching orphan", d, testRS("a", 1, 0), claimAdopt},
		{"orphan not matching", d, testRS("a", 1, 0, relabelled), claimIgnore},
		{"orphan being deleted", d, testRS("a", 1, 0, deleting), claimIgnore},
		{"orphan, deployment being deleted", gone, testRS("a", 1, 0), claimIgnore},
		{"orphan in another namespace", d, testRS("a", 1, 0, elsewhere), claimIgnore},
	}
	selector := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideClaim(tt.d, selector, tt.rs); got != tt.want {
				t.Errorf("decideClaim = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOwnerPatches(t *testing.T) {
	d := newDeployment(1, "", "")
	var adopt struct {
		Metadata struct {
			OwnerReferences []metav1.OwnerReference
			UID             string
		}
	}
	if err := json.Unmarshal(adoptPatch(d, "rs-uid"), &adopt); err != nil {
		t.Fatal(err)
	}
	refs := adopt.Metadata.OwnerReferences
	if len(refs) != 1 || refs[0].UID != d.UID || refs[0].Kind != "Deployment" || !*refs[0].Controller || !*refs[0].BlockOwnerDeletion || adopt.Metadata.UID != "rs-uid" {
		t.Errorf("adopt patch %+v", adopt)
	}
	if got, want := string(releasePatch("d-uid", "rs-uid")), `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"d-uid"}],"uid":"rs-uid"}}`; got != want {
		t.Errorf("release patch %s, want %s", got, want)
	}
}
