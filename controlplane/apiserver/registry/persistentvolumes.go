package registry

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// PersistentVolumes and PersistentVolumeClaims (core/v1) are
// kube-apiserver's, with its StorageObjectInUseProtection admission: every
// new volume and claim carries a protection finalizer that the protection
// controllers lift once nothing uses it.

const (
	// PVProtectionFinalizer holds a deleted volume while a claim is bound to it.
	PVProtectionFinalizer = "kubernetes.io/pv-protection"
	// PVCProtectionFinalizer holds a deleted claim while a pod uses it.
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
)

var accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}

func addFinalizer(m *metav1.ObjectMeta, f string) {
	if !slices.Contains(m.Finalizers, f) {
		m.Finalizers = append(m.Finalizers, f)
	}
}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, path *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(path, "at least 1 access mode is required")}
	}
	var errs field.ErrorList
	for _, m := range modes {
		errs = append(errs, validateOneOf(m, path, accessModes...)...)
	}
	if slices.Contains(modes, corev1.ReadWriteOncePod) && len(modes) > 1 {
		errs = append(errs, field.Forbidden(path, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// validateStorageSize checks that list names a positive storage size.
func validateStorageSize(list corev1.ResourceList, path *field.Path) field.ErrorList {
	q, ok := list[corev1.ResourceStorage]
	p := path.Key(string(corev1.ResourceStorage))
	switch {
	case !ok:
		return field.ErrorList{field.Required(p, "")}
	case q.Sign() <= 0:
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than zero")}
	}
	return nil
}

func validateVolumeMode(m *corev1.PersistentVolumeMode, path *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	return validateOneOf(*m, path, corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
}

func defaultPVCSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
}

func validatePVCSpec(spec *corev1.PersistentVolumeClaimSpec, path *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, path.Child("accessModes"))
	if spec.Selector != nil {
		errs = append(errs, validateLabelSelector(spec.Selector, path.Child("selector"))...)
	}
	errs = append(errs, validateStorageSize(spec.Resources.Requests, path.Child("resources", "requests"))...)
	if c := spec.StorageClassName; c != nil && *c != "" {
		errs = append(errs, validateDNSSubdomain(*c, path.Child("storageClassName"))...)
	}
	return append(errs, validateVolumeMode(spec.VolumeMode, path.Child("volumeMode"))...)
}

type claimStrategy struct{ BaseStrategy }

func (claimStrategy) PrepareForCreate(obj runtime.Object) {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	defaultPVCSpec(&pvc.Spec)
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	addFinalizer(&pvc.ObjectMeta, PVCProtectionFinalizer)
}

func (claimStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultPVCSpec(&obj.(*corev1.PersistentVolumeClaim).Spec)
}

func (claimStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validatePVCSpec(&obj.(*corev1.PersistentVolumeClaim).Spec, field.NewPath("spec"))
}

// ValidateUpdate: a claim's spec is fixed once made, except that its
// volume may be named while empty and a bound claim may grow.
func (claimStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pvc, prev := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
	a, b := pvc.Spec.DeepCopy(), prev.Spec.DeepCopy()
	if b.VolumeName == "" {
		b.VolumeName = a.VolumeName
	}
	if prev.Status.Phase == corev1.ClaimBound {
		b.Resources.Requests = a.Resources.Requests
		b.VolumeAttributesClassName = a.VolumeAttributesClassName
	}
	if !apiequality.Semantic.DeepEqual(a, b) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"),
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")}
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], prev.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity")}
	}
	return nil
}

// Fields are kube-apiserver's for claims.
func (claimStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"status.phase": string(obj.(*corev1.PersistentVolumeClaim).Status.Phase)}
}

func (claimStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		column("Status", "string", "The claim's phase."),
		column("Volume", "string", "The volume bound to the claim."),
		column("Capacity", "string", "The volume's capacity."),
		column("Access Modes", "string", "How the volume may be mounted."),
		column("StorageClass", "string", "The claim's storage class."),
		column("VolumeAttributesClass", "string", "The claim's volume attributes class."),
		ageColumn,
		wideColumn("VolumeMode", "string", "Filesystem or Block."),
	}
}

func (claimStrategy) Row(obj runtime.Object) []any {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
			capacity = q.String()
		}
		modes = shortAccessModes(pvc.Status.AccessModes)
	}
	return []any{pvc.Name, string(pvc.Status.Phase), pvc.Spec.VolumeName, capacity, modes,
		ptr.Deref(pvc.Spec.StorageClassName, ""), orUnset(pvc.Spec.VolumeAttributesClassName), age(pvc.CreationTimestamp), volumeMode(pvc.Spec.VolumeMode)}
}

func orUnset(s *string) string {
	if s == nil || *s == "" {
		return "<unset>"
	}
	return *s
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// shortAccessModes is kubectl's RWO,ROX,RWX,RWOP.
func shortAccessModes(modes []corev1.PersistentVolumeAccessMode) string {
	short := map[corev1.PersistentVolumeAccessMode]string{corev1.ReadWriteOnce: "RWO", corev1.ReadOnlyMany: "ROX",
		corev1.ReadWriteMany: "RWX", corev1.ReadWriteOncePod: "RWOP"}
	var out []string
	for _, m := range accessModes {
		if slices.Contains(modes, m) {
			out = append(out, short[m])
		}
	}
	return strings.Join(out, ",")
}

type volumeStrategy struct{ BaseStrategy }

func (volumeStrategy) PrepareForCreate(obj runtime.Object) {
	pv := obj.(*corev1.PersistentVolume)
	defaultPersistentVolume(pv)
	now := metav1.Now()
	pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
	addFinalizer(&pv.ObjectMeta, PVProtectionFinalizer)
}

func defaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
		hp.Type = ptr.To(corev1.HostPathUnset)
	}
}

func (volumeStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultPersistentVolume(obj.(*corev1.PersistentVolume))
}

// PrepareSubresourceUpdate stamps a change of phase, as kube-apiserver does.
func (volumeStrategy) PrepareSubresourceUpdate(_ string, obj, old runtime.Object) {
	pv, prev := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
	if pv.Status.Phase != prev.Status.Phase {
		now := metav1.Now()
		pv.Status.LastPhaseTransitionTime = &now
	}
}

func (volumeStrategy) Validate(obj runtime.Object) field.ErrorList {
	pv := obj.(*corev1.PersistentVolume)
	spec, path := &pv.Spec, field.NewPath("spec")
	errs := validateAccessModes(spec.AccessModes, path.Child("accessModes"))
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(path.Child("capacity"), spec.Capacity, []string{string(corev1.ResourceStorage)}))
	} else {
		errs = append(errs, validateStorageSize(spec.Capacity, path.Child("capacity"))...)
	}
	errs = append(errs, validateOneOf(spec.PersistentVolumeReclaimPolicy, path.Child("persistentVolumeReclaimPolicy"),
		corev1.PersistentVolumeReclaimRetain, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimDelete)...)
	if spec.StorageClassName != "" {
		errs = append(errs, validateDNSSubdomain(spec.StorageClassName, path.Child("storageClassName"))...)
	}
	errs = append(errs, validateVolumeMode(spec.VolumeMode, path.Child("volumeMode"))...)
	return append(errs, validateVolumeSource(spec, path)...)
}

// validateVolumeSource checks that the volume names exactly one source;
// skiff's agents mount hostPath and local volumes.
func validateVolumeSource(spec *corev1.PersistentVolumeSpec, path *field.Path) field.ErrorList {
	n, err := countVolumeSources(&spec.PersistentVolumeSource)
	switch {
	case err != nil:
		return field.ErrorList{field.InternalError(path, err)}
	case n == 0:
		return field.ErrorList{field.Required(path, "must specify a volume type")}
	case n > 1:
		return field.ErrorList{field.Forbidden(path, "may not specify more than 1 volume type")}
	}
	var errs field.ErrorList
	if hp := spec.HostPath; hp != nil && hp.Path == "" {
		errs = append(errs, field.Required(path.Child("hostPath", "path"), ""))
	}
	if l := spec.Local; l != nil {
		if l.Path == "" {
			errs = append(errs, field.Required(path.Child("local", "path"), ""))
		}
		if spec.NodeAffinity == nil || spec.NodeAffinity.Required == nil {
			errs = append(errs, field.Required(path.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if na := spec.NodeAffinity; na != nil && na.Required != nil && len(na.Required.NodeSelectorTerms) == 0 {
		errs = append(errs, field.Required(path.Child("nodeAffinity", "required", "nodeSelectorTerms"), "must have at least one node selector term"))
	}
	return errs
}

// countVolumeSources counts the set pointers of a PersistentVolumeSource.
func countVolumeSources(src *corev1.PersistentVolumeSource) (int, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(src)
	if err != nil {
		return 0, err
	}
	return len(u), nil
}

// ValidateUpdate: what the volume is stays; its affinity may only be set.
func (volumeStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pv, prev := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, prev.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	if prev.Spec.NodeAffinity != nil && !apiequality.Semantic.DeepEqual(pv.Spec.NodeAffinity, prev.Spec.NodeAffinity) {
		errs = append(errs, immutable(true, field.NewPath("spec", "nodeAffinity"), pv.Spec.NodeAffinity)...)
	}
	return append(errs, immutable(!apiequality.Semantic.DeepEqual(pv.Spec.VolumeMode, prev.Spec.VolumeMode),
		field.NewPath("spec", "volumeMode"), volumeMode(pv.Spec.VolumeMode))...)
}

func (volumeStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"status.phase": string(obj.(*corev1.PersistentVolume).Status.Phase)}
}

func (volumeStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		column("Capacity", "string", "The volume's capacity."),
		column("Access Modes", "string", "How the volume may be mounted."),
		column("Reclaim Policy", "string", "What happens to the volume when its claim goes."),
		column("Status", "string", "The volume's phase."),
		column("Claim", "string", "The claim bound to the volume."),
		column("StorageClass", "string", "The volume's storage class."),
		column("VolumeAttributesClass", "string", "The volume's attributes class."),
		column("Reason", "string", "Why the volume is in its phase."),
		ageColumn,
		wideColumn("VolumeMode", "string", "Filesystem or Block."),
	}
}

func (volumeStrategy) Row(obj runtime.Object) []any {
	pv := obj.(*corev1.PersistentVolume)
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = fmt.Sprintf("%s/%s", ref.Namespace, ref.Name)
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	return []any{pv.Name, capacity.String(), shortAccessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
		string(pv.Status.Phase), claim, pv.Spec.StorageClassName, orUnset(pv.Spec.VolumeAttributesClassName),
		pv.Status.Reason, age(pv.CreationTimestamp), volumeMode(pv.Spec.VolumeMode)}
}
