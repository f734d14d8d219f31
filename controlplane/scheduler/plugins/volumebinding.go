package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/skiff-lab/skiff/controlplane/controllers/persistentvolume"
	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
	"github.com/skiff-lab/skiff/localpath"
	"github.com/skiff-lab/skiff/podrefs"
)

// The reasons VolumeBinding gives, in kube-scheduler's words.
const (
	reasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
	reasonNodeConflict     = "node(s) didn't match PersistentVolume's node affinity"
	reasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
	noProvisioner          = "kubernetes.io/no-provisioner"
)

// VolumeBinding places a pod where its claims' volumes are, as
// kube-scheduler's plugin of that name: a pod whose claim is missing,
// being deleted or (for an Immediate class) not bound yet fits nowhere;
// a bound claim's volume must allow the node (its node affinity); an
// unbound claim of a WaitForFirstConsumer class needs, on the node, a
// free volume that fits when its class provisions none, and is given the
// node (selected-node) before the pod is bound, for the binder or the
// class's provisioner to act on.
type VolumeBinding struct {
	Client  kubernetes.Interface
	Claims  corelisters.PersistentVolumeClaimLister
	Volumes corelisters.PersistentVolumeLister
	Classes storagelisters.StorageClassLister
}

var (
	_ framework.PreFilterPlugin = VolumeBinding{}
	_ framework.FilterPlugin    = VolumeBinding{}
	_ framework.PreBindPlugin   = VolumeBinding{}
)

func (VolumeBinding) Name() string { return "VolumeBinding" }

// podClaims are what PreFilter found: the volumes of bound claims, and
// the unbound claims whose binding waits for the pod's node.
type podClaims struct {
	bound   []*corev1.PersistentVolume
	delayed []*corev1.PersistentVolumeClaim
}

const volumeBindingKey = "VolumeBinding"

func (v VolumeBinding) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) *framework.Status {
	pc, err := v.claimsOf(pod)
	if err != nil {
		return framework.Unfit(err.Error())
	}
	state.Write(volumeBindingKey, pc)
	return nil
}

// claimsOf sorts the pod's claims into bound and delayed ones, or says
// why the pod cannot be scheduled yet.
func (v VolumeBinding) claimsOf(pod *corev1.Pod) (podClaims, error) {
	var pc podClaims
	immediate := false
	for i := range pod.Spec.Volumes {
		name, ephemeral, ok := podrefs.ClaimName(pod, &pod.Spec.Volumes[i])
		if !ok {
			continue
		}
		pvc, err := v.claim(pod, name, ephemeral)
		if err != nil {
			return pc, err
		}
		if pvc.Spec.VolumeName != "" {
			pv, err := v.Volumes.Get(pvc.Spec.VolumeName)
			if err != nil {
				return pc, fmt.Errorf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", pvc.Name, pvc.Spec.VolumeName)
			}
			pc.bound = append(pc.bound, pv)
			continue
		}
		if v.delaysBinding(pvc) {
			pc.delayed = append(pc.delayed, pvc)
		} else {
			immediate = true
		}
	}
	if immediate {
		return pc, fmt.Errorf("%s", reasonUnboundImmediate)
	}
	return pc, nil
}

// claim is the named claim, if the pod may use it.
func (v VolumeBinding) claim(pod *corev1.Pod, name string, ephemeral bool) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := v.Claims.PersistentVolumeClaims(pod.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err) && ephemeral:
		return nil, fmt.Errorf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name)
	case err != nil:
		return nil, err
	case pvc.Status.Phase == corev1.ClaimLost:
		return nil, fmt.Errorf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", pvc.Name, pvc.Spec.VolumeName)
	case pvc.DeletionTimestamp != nil:
		return nil, fmt.Errorf("persistentvolumeclaim %q is being deleted", pvc.Name)
	case ephemeral && !metav1.IsControlledBy(pvc, pod):
		return nil, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pvc.Namespace, pvc.Name, pod.Namespace, pod.Name)
	}
	return pvc, nil
}

// class is a claim's StorageClass, nil if it names none or one that does
// not exist.
func (v VolumeBinding) class(pvc *corev1.PersistentVolumeClaim) *storagev1.StorageClass {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil
	}
	sc, err := v.Classes.Get(*pvc.Spec.StorageClassName)
	if err != nil {
		return nil
	}
	return sc
}

func (v VolumeBinding) delaysBinding(pvc *corev1.PersistentVolumeClaim) bool {
	sc := v.class(pvc)
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

func (v VolumeBinding) Filter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	data, ok := state.Read(volumeBindingKey)
	if !ok {
		return nil
	}
	pc := data.(podClaims)
	for _, pv := range pc.bound {
		if !persistentvolume.Reaches(pv, ni.Node) {
			return framework.Unfit(reasonNodeConflict)
		}
	}
	for _, pvc := range pc.delayed {
		if node, ok := pvc.Annotations[localpath.AnnSelectedNode]; ok && node != ni.Node.Name {
			return framework.Unfit(reasonBindConflict)
		}
		if sc := v.class(pvc); sc != nil && sc.Provisioner == noProvisioner && !v.freeVolumeOn(pvc, ni.Node) {
			return framework.Unfit(reasonBindConflict)
		}
	}
	return nil
}

// freeVolumeOn says whether a free volume that fits the claim reaches
// node.
func (v VolumeBinding) freeVolumeOn(pvc *corev1.PersistentVolumeClaim, node *corev1.Node) bool {
	all, err := v.Volumes.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, pv := range all {
		if persistentvolume.Fits(pv, pvc) && persistentvolume.Reaches(pv, node) {
			return true
		}
	}
	return false
}

// PreBind gives the pod's delayed claims the chosen node, as
// selected-node, before the pod is bound there.
func (v VolumeBinding) PreBind(ctx context.Context, pod *corev1.Pod, node string) error {
	pc, err := v.claimsOf(pod)
	if err != nil {
		return err
	}
	for _, pvc := range pc.delayed {
		if pvc.Annotations[localpath.AnnSelectedNode] == node {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, localpath.AnnSelectedNode, node)
		_, err := v.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("select node %s for claim %s: %w", node, pvc.Name, err)
		}
	}
	return nil
}
