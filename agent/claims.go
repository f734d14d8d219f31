package agent

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/agent/volumes"
	"github.com/skiff-lab/skiff/podrefs"
)

// claimKey names one claim volume of one pod.
type claimKey struct {
	uid types.UID
	vol string
}

// claimVolume is the host path behind a claim volume (persistentVolumeClaim
// or generic ephemeral): the claim must be bound, and its volume a
// hostPath (made here for the *OrCreate types) or a local path on this
// node. Once found, it is kept for the pod's life: a bound claim does not
// change its volume.
func (s *podSync) claimVolume(ctx context.Context, vol *v1.Volume) (string, error) {
	key := claimKey{s.pod.UID, vol.Name}
	if path, ok := s.a.claims.Load(key); ok {
		return path.(string), nil
	}
	name, ephemeral, _ := podrefs.ClaimName(s.pod, vol)
	pvc, err := s.a.client.CoreV1().PersistentVolumeClaims(s.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("error processing PVC %s/%s: %w", s.pod.Namespace, name, err)
	}
	if ephemeral && !metav1.IsControlledBy(pvc, s.pod) {
		return "", fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pvc.Namespace, pvc.Name, s.pod.Namespace, s.pod.Name)
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("error processing PVC %s/%s: PVC %s/%s has non-bound phase (%q) or empty pvc.Spec.VolumeName (%q)",
			pvc.Namespace, pvc.Name, pvc.Namespace, pvc.Name, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := s.a.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("error processing PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	path, err := volumePath(pv)
	if err != nil {
		return "", err
	}
	s.a.claims.Store(key, path)
	return path, nil
}

// volumePath is where a PersistentVolume's data is on this node.
func volumePath(pv *v1.PersistentVolume) (string, error) {
	switch src := pv.Spec.PersistentVolumeSource; {
	case src.HostPath != nil:
		return src.HostPath.Path, volumes.CheckHostPath(src.HostPath.Path, src.HostPath.Type)
	case src.Local != nil:
		if _, err := os.Stat(src.Local.Path); err != nil {
			return "", fmt.Errorf("local volume %s: %w", pv.Name, err)
		}
		return src.Local.Path, nil
	}
	return "", fmt.Errorf("persistent volume %s: only hostPath and local volumes can be mounted on this node", pv.Name)
}

// forgetClaims drops what claimVolume kept for a pod.
func (a *Agent) forgetClaims(uid types.UID) {
	a.claims.Range(func(key, _ any) bool {
		if key.(claimKey).uid == uid {
			a.claims.Delete(key)
		}
		return true
	})
}
