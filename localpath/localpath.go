// Package localpath is skiff's built-in storage, as k3s ships
// local-path: a default StorageClass, local-path, whose claims wait for
// their first pod (WaitForFirstConsumer); once the scheduler has chosen
// that pod's node, the node's agent makes a directory for the claim under
// its data dir and a PersistentVolume for it, a hostPath volume with node
// affinity to that node so that the pod stays with its data. When the
// claim goes, the volume is released and (reclaim policy Delete) the agent
// removes the directory and the volume. A claim may grow (the class allows
// expansion): a directory has no size, so the agent grows the volume's
// and the claim's capacity.
package localpath

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// Provisioner is the provisioner name of the class and its volumes.
	Provisioner = "skiff.io/local-path"
	// ClassName is the default StorageClass's name.
	ClassName = "local-path"

	// AnnProvisionedBy names a volume's provisioner.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnStorageProvisioner names the provisioner asked to make a claim's
	// volume (set by the binder); AnnBetaStorageProvisioner is its older key.
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnSelectedNode is the node the scheduler chose for a claim's first
	// pod (WaitForFirstConsumer).
	AnnSelectedNode = "volume.kubernetes.io/selected-node"

	defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
)

// Class is the default StorageClass the server makes at start.
func Class() *storagev1.StorageClass {
	reclaim := v1.PersistentVolumeReclaimDelete
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: ClassName, Annotations: map[string]string{defaultClassAnnotation: "true"}},
		Provisioner:          Provisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &mode,
		AllowVolumeExpansion: ptr.To(true),
	}
}

// Owns says whether this provisioner made pv.
func Owns(pv *v1.PersistentVolume) bool { return pv.Annotations[AnnProvisionedBy] == Provisioner }

// NodeOf is the one node a volume's node affinity allows, if it names
// exactly one by its hostname label, as this provisioner's volumes do.
func NodeOf(pv *v1.PersistentVolume) (string, bool) {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) != 1 {
		return "", false
	}
	term := na.Required.NodeSelectorTerms[0]
	if len(term.MatchFields) != 0 || len(term.MatchExpressions) != 1 {
		return "", false
	}
	e := term.MatchExpressions[0]
	if e.Key != v1.LabelHostname || e.Operator != v1.NodeSelectorOpIn || len(e.Values) != 1 {
		return "", false
	}
	return e.Values[0], true
}

// WantsProvisioning says whether this provisioner on node should make a
// volume for pvc: an unbound claim given to it, whose first pod was
// scheduled to node.
func WantsProvisioning(pvc *v1.PersistentVolumeClaim, node string) bool {
	asked := pvc.Annotations[AnnStorageProvisioner] == Provisioner || pvc.Annotations[AnnBetaStorageProvisioner] == Provisioner
	return asked && pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil && pvc.Annotations[AnnSelectedNode] == node
}

// VolumeName is the name of the volume made for a claim.
func VolumeName(pvc *v1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// dirName is the directory of a claim's volume under the storage dir, as
// local-path names it: the volume, the namespace and the claim.
func dirName(pvc *v1.PersistentVolumeClaim) string {
	return fmt.Sprintf("%s_%s_%s", VolumeName(pvc), pvc.Namespace, pvc.Name)
}

// volumeFor is the volume for pvc of class sc at path on node: the
// claim's size, modes and volume mode, the class's reclaim policy and
// mount options, bound ahead to the claim.
func volumeFor(pvc *v1.PersistentVolumeClaim, sc *storagev1.StorageClass, node, path string) *v1.PersistentVolume {
	reclaim := v1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	dirType := v1.HostPathDirectoryOrCreate
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: VolumeName(pvc), Annotations: map[string]string{AnnProvisionedBy: Provisioner}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: pvc.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              sc.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			MountOptions:                  sc.MountOptions,
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace,
				Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &dirType}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

// inDir says whether path is a claim's directory directly under dir.
func inDir(dir, path string) bool {
	rest, ok := strings.CutPrefix(path, strings.TrimSuffix(dir, "/")+"/")
	return ok && rest != "" && !strings.Contains(rest, "/") && strings.HasPrefix(rest, "pvc-") && rest != ".." && rest != "."
}
