package registry

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
)

func newClaimSpec(size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}
}

func newStatefulSet(mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	tmpl := newTemplate(map[string]string{"app": "x"})
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: tmpl, ServiceName: "x",
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: newClaimSpec("1Gi")}},
	}}
	ss.Name, ss.Namespace = "x", "default"
	if mutate != nil {
		mutate(ss)
	}
	statefulSetStrategy{}.PrepareForCreate(ss)
	return ss
}

func TestStatefulSetDefaultsAndValidate(t *testing.T) {
	ss := newStatefulSet(nil)
	ru := ss.Spec.UpdateStrategy.RollingUpdate
	rp := ss.Spec.PersistentVolumeClaimRetentionPolicy
	if *ss.Spec.Replicas != 1 || ss.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
		ss.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *ru.Partition != 0 || ru.MaxUnavailable.IntValue() != 1 ||
		rp.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || rp.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*ss.Spec.VolumeClaimTemplates[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("defaults: %+v", ss.Spec)
	}
	// The template's containers may mount the claim templates.
	apitest.CheckErrorFields(t, statefulSetStrategy{}.Validate(ss))

	mismatch := newStatefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.Template.Labels = map[string]string{"app": "y"} })
	apitest.CheckErrorFields(t, statefulSetStrategy{}.Validate(mismatch), "spec.template.metadata.labels: Invalid value")
	onDelete := newStatefulSet(func(ss *appsv1.StatefulSet) {
		ss.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}}
	})
	apitest.CheckErrorFields(t, statefulSetStrategy{}.Validate(onDelete), "spec.updateStrategy.rollingUpdate: Invalid value")
	badClaim := newStatefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil })
	apitest.CheckErrorFields(t, statefulSetStrategy{}.Validate(badClaim), "spec.volumeClaimTemplates[0].spec.accessModes: Required value")

	// What may change changes; the rest is forbidden.
	update := ss.DeepCopy()
	update.Spec.Replicas, update.Spec.MinReadySeconds = ptr.To[int32](3), 5
	update.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	apitest.CheckErrorFields(t, statefulSetStrategy{}.ValidateUpdate(update, ss))
	update.Spec.ServiceName = "other"
	apitest.CheckErrorFields(t, statefulSetStrategy{}.ValidateUpdate(update, ss), "spec: Forbidden")
}

func TestClaimsAndVolumes(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{Spec: newClaimSpec("1Gi")}
	claimStrategy{}.PrepareForCreate(pvc)
	if pvc.Status.Phase != corev1.ClaimPending || len(pvc.Finalizers) != 1 || pvc.Finalizers[0] != PVCProtectionFinalizer {
		t.Errorf("new claim: %+v %v", pvc.Status, pvc.Finalizers)
	}
	apitest.CheckErrorFields(t, claimStrategy{}.Validate(pvc))
	zero := &corev1.PersistentVolumeClaim{Spec: newClaimSpec("0")}
	apitest.CheckErrorFields(t, claimStrategy{}.Validate(zero), "spec.resources.requests[storage]: Invalid value")

	// A bound claim may grow, not shrink; its class stays.
	bound := pvc.DeepCopy()
	bound.Status.Phase = corev1.ClaimBound
	grown := bound.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	apitest.CheckErrorFields(t, claimStrategy{}.ValidateUpdate(grown, bound))
	apitest.CheckErrorFields(t, claimStrategy{}.ValidateUpdate(bound, grown), "spec.resources.requests.storage: Forbidden")
	moved := bound.DeepCopy()
	moved.Spec.StorageClassName = ptr.To("fast")
	apitest.CheckErrorFields(t, claimStrategy{}.ValidateUpdate(moved, bound), "spec: Forbidden")

	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/a"}}}}
	volumeStrategy{}.PrepareForCreate(pv)
	if pv.Status.Phase != corev1.VolumePending || pv.Status.LastPhaseTransitionTime == nil ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Finalizers[0] != PVProtectionFinalizer {
		t.Errorf("new volume: %+v %+v %v", pv.Spec, pv.Status, pv.Finalizers)
	}
	apitest.CheckErrorFields(t, volumeStrategy{}.Validate(pv))
	two := pv.DeepCopy()
	two.Spec.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/"}
	apitest.CheckErrorFields(t, volumeStrategy{}.Validate(two), "spec: Forbidden")
	local := pv.DeepCopy()
	local.Spec.HostPath, local.Spec.Local = nil, &corev1.LocalVolumeSource{Path: "/mnt"}
	apitest.CheckErrorFields(t, volumeStrategy{}.Validate(local), "spec.nodeAffinity: Required value")
	apitest.CheckErrorFields(t, volumeStrategy{}.ValidateUpdate(local, pv), "spec.persistentvolumesource: Forbidden")
}
