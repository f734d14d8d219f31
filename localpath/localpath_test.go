package localpath

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pendingClaim(annotations map[string]string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "u1", Annotations: annotations},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// TestWantsProvisioning: only a pending claim given to this provisioner
// and scheduled to this node.
func TestWantsProvisioning(t *testing.T) {
	ours := map[string]string{AnnStorageProvisioner: Provisioner, AnnSelectedNode: "n1"}
	if !WantsProvisioning(pendingClaim(ours), "n1") {
		t.Error("a pending claim for this node: not provisioned")
	}
	for what, pvc := range map[string]*v1.PersistentVolumeClaim{
		"another node":        pendingClaim(map[string]string{AnnStorageProvisioner: Provisioner, AnnSelectedNode: "n2"}),
		"no node yet":         pendingClaim(map[string]string{AnnStorageProvisioner: Provisioner}),
		"another provisioner": pendingClaim(map[string]string{AnnStorageProvisioner: "example.com/nfs", AnnSelectedNode: "n1"}),
		"bound":               func() *v1.PersistentVolumeClaim { c := pendingClaim(ours); c.Spec.VolumeName = "pv"; return c }(),
	} {
		if WantsProvisioning(pvc, "n1") {
			t.Errorf("%s: provisioned", what)
		}
	}
}

// TestVolumeFor: the volume is the claim's size and modes, the class's
// policy, a directory under the storage dir, bound ahead to the claim and
// tied to the node.
func TestVolumeFor(t *testing.T) {
	pvc := pendingClaim(nil)
	sc := Class()
	pv := volumeFor(pvc, sc, "n1", "/var/lib/skiff/storage/"+dirName(pvc))
	if pv.Name != "pvc-u1" || !Owns(pv) || pv.Spec.StorageClassName != ClassName ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || !pv.Spec.Capacity.Storage().Equal(resource.MustParse("1Gi")) {
		t.Errorf("volume: %+v", pv)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != "u1" || ref.Name != "data" || ref.Namespace != "ns" {
		t.Errorf("claimRef: %+v", ref)
	}
	if node, ok := NodeOf(pv); !ok || node != "n1" {
		t.Errorf("NodeOf = %q %v", node, ok)
	}
	if got := pv.Spec.HostPath.Path; got != "/var/lib/skiff/storage/pvc-u1_ns_data" || !inDir("/var/lib/skiff/storage", got) {
		t.Errorf("path %s", got)
	}
	for _, path := range []string{"/var/lib/skiff/storage", "/var/lib/skiff/storage/", "/var/lib/skiff/storage/pvc-1/x",
		"/var/lib/skiff/storage/other", "/etc/pvc-1", "/var/lib/skiff/storage/../pvc-1"} {
		if inDir("/var/lib/skiff/storage", path) {
			t.Errorf("inDir(%s): true", path)
		}
	}
}
