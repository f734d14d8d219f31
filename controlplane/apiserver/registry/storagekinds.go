package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The storage.k8s.io kinds are served as API objects: skiff has no
// volume provisioner or CSI driver of its own yet, but tools and drivers
// read and write them as on any cluster.

func validateQualifiedName(v string, path *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return invalidFor(path, v, validation.IsQualifiedName(v))
}

func requiredDNSSubdomain(v string, path *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return validateDNSSubdomain(v, path)
}

type storageClassStrategy struct{ BaseStrategy }

func (storageClassStrategy) PrepareForCreate(obj runtime.Object) {
	defaultStorageClass(obj.(*storagev1.StorageClass))
}
func (storageClassStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultStorageClass(obj.(*storagev1.StorageClass))
}

// DefaultStorageClassAnnotation marks the cluster's default StorageClass
// (betaDefaultStorageClassAnnotation is its older key).
const (
	DefaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultStorageClass says whether sc is marked as the default class.
func IsDefaultStorageClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[DefaultStorageClassAnnotation] == "true" || sc.Annotations[betaDefaultStorageClassAnnotation] == "true"
}

func defaultStorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
}

func (storageClassStrategy) Validate(obj runtime.Object) field.ErrorList {
	sc := obj.(*storagev1.StorageClass)
	errs := validateQualifiedName(sc.Provisioner, field.NewPath("provisioner"))
	errs = append(errs, validateOneOf(*sc.ReclaimPolicy, field.NewPath("reclaimPolicy"),
		corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain)...)
	return append(errs, validateOneOf(*sc.VolumeBindingMode, field.NewPath("volumeBindingMode"),
		storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer)...)
}

func (storageClassStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	sc, prev := obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
	errs := immutable(!apiequality.Semantic.DeepEqual(sc.Parameters, prev.Parameters), field.NewPath("parameters"), sc.Parameters)
	errs = append(errs, immutable(sc.Provisioner != prev.Provisioner, field.NewPath("provisioner"), sc.Provisioner)...)
	errs = append(errs, immutable(*sc.ReclaimPolicy != *prev.ReclaimPolicy, field.NewPath("reclaimPolicy"), *sc.ReclaimPolicy)...)
	return append(errs, immutable(*sc.VolumeBindingMode != *prev.VolumeBindingMode, field.NewPath("volumeBindingMode"), *sc.VolumeBindingMode)...)
}

func (storageClassStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Provisioner", "string", "The class's provisioner."),
		column("ReclaimPolicy", "string", "What happens to released volumes."),
		column("VolumeBindingMode", "string", "When volumes are bound."),
		column("AllowVolumeExpansion", "string", "Whether volumes may grow."), ageColumn}
}

func (storageClassStrategy) Row(obj runtime.Object) []any {
	sc := obj.(*storagev1.StorageClass)
	expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	name := sc.Name
	if IsDefaultStorageClass(sc) {
		name += " (default)"
	}
	return []any{name, sc.Provisioner, string(*sc.ReclaimPolicy), string(*sc.VolumeBindingMode), fmt.Sprint(expand), age(sc.CreationTimestamp)}
}

type csiDriverStrategy struct{ BaseStrategy }

func (csiDriverStrategy) PrepareForCreate(obj runtime.Object) {
	defaultCSIDriver(obj.(*storagev1.CSIDriver))
}
func (csiDriverStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultCSIDriver(obj.(*storagev1.CSIDriver))
}

// defaultCSIDriver sets the v1 API's defaults.
func defaultCSIDriver(d *storagev1.CSIDriver) {
	s := &d.Spec
	for _, b := range []**bool{&s.AttachRequired} {
		if *b == nil {
			*b = ptr.To(true)
		}
	}
	for _, b := range []**bool{&s.PodInfoOnMount, &s.StorageCapacity, &s.RequiresRepublish, &s.SELinuxMount} {
		if *b == nil {
			*b = ptr.To(false)
		}
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
}

func (csiDriverStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*storagev1.CSIDriver).Spec
	path := field.NewPath("spec")
	errs := validateOneOf(*s.FSGroupPolicy, path.Child("fsGroupPolicy"), storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy,
		storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy)
	for i, m := range s.VolumeLifecycleModes {
		errs = append(errs, validateOneOf(m, path.Child("volumeLifecycleModes").Index(i),
			storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral)...)
	}
	for i, t := range s.TokenRequests {
		if t.ExpirationSeconds != nil && *t.ExpirationSeconds < 600 {
			errs = append(errs, field.Invalid(path.Child("tokenRequests").Index(i).Child("expirationSeconds"),
				*t.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
	}
	return errs
}

func (csiDriverStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, prev := obj.(*storagev1.CSIDriver).Spec, old.(*storagev1.CSIDriver).Spec
	return immutable(*s.AttachRequired != *prev.AttachRequired, field.NewPath("spec", "attachRequired"), *s.AttachRequired)
}

type csiNodeStrategy struct{ BaseStrategy }

func (csiNodeStrategy) Validate(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, d := range obj.(*storagev1.CSINode).Spec.Drivers {
		path := field.NewPath("spec", "drivers").Index(i)
		errs = append(errs, validateQualifiedName(d.Name, path.Child("name"))...)
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		if d.NodeID == "" {
			errs = append(errs, field.Required(path.Child("nodeID"), ""))
		}
		for j, k := range d.TopologyKeys {
			errs = append(errs, validateQualifiedName(k, path.Child("topologyKeys").Index(j))...)
		}
	}
	return errs
}

type csiStorageCapacityStrategy struct{ BaseStrategy }

func (csiStorageCapacityStrategy) Validate(obj runtime.Object) field.ErrorList {
	c := obj.(*storagev1.CSIStorageCapacity)
	errs := requiredDNSSubdomain(c.StorageClassName, field.NewPath("storageClassName"))
	for name, q := range map[string]*apiresource.Quantity{"capacity": c.Capacity, "maximumVolumeSize": c.MaximumVolumeSize} {
		if q != nil && q.Sign() < 0 {
			errs = append(errs, field.Invalid(field.NewPath(name), q.String(), "must be greater than or equal to 0"))
		}
	}
	if c.NodeTopology != nil {
		errs = append(errs, validateLabelSelector(c.NodeTopology, field.NewPath("nodeTopology"))...)
	}
	return errs
}

func (csiStorageCapacityStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	c, prev := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
	errs := immutable(c.StorageClassName != prev.StorageClassName, field.NewPath("storageClassName"), c.StorageClassName)
	return append(errs, immutable(!apiequality.Semantic.DeepEqual(c.NodeTopology, prev.NodeTopology), field.NewPath("nodeTopology"), c.NodeTopology)...)
}

type volumeAttachmentStrategy struct{ BaseStrategy }

func (volumeAttachmentStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
}

func (volumeAttachmentStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*storagev1.VolumeAttachment).Spec
	path := field.NewPath("spec")
	errs := validateQualifiedName(s.Attacher, path.Child("attacher"))
	errs = append(errs, requiredDNSSubdomain(s.NodeName, path.Child("nodeName"))...)
	switch src := s.Source; {
	case src.PersistentVolumeName == nil && src.InlineVolumeSpec == nil:
		errs = append(errs, field.Required(path.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
		errs = append(errs, field.Forbidden(path.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		errs = append(errs, validateDNSSubdomain(*src.PersistentVolumeName, path.Child("source", "persistentVolumeName"))...)
	}
	return errs
}

func (volumeAttachmentStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, prev := obj.(*storagev1.VolumeAttachment).Spec, old.(*storagev1.VolumeAttachment).Spec
	return immutable(!apiequality.Semantic.DeepEqual(s, prev), field.NewPath("spec"), "")
}

func (volumeAttachmentStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Attacher", "string", "The attacher."),
		column("PV", "string", "The volume."), column("Node", "string", "The node."),
		column("Attached", "boolean", "Whether the volume is attached."), ageColumn}
}

func (volumeAttachmentStrategy) Row(obj runtime.Object) []any {
	va := obj.(*storagev1.VolumeAttachment)
	pv := ""
	if va.Spec.Source.PersistentVolumeName != nil {
		pv = *va.Spec.Source.PersistentVolumeName
	}
	return []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, age(va.CreationTimestamp)}
}

type volumeAttributesClassStrategy struct{ BaseStrategy }

func (volumeAttributesClassStrategy) Validate(obj runtime.Object) field.ErrorList {
	c := obj.(*storagev1.VolumeAttributesClass)
	errs := validateQualifiedName(c.DriverName, field.NewPath("driverName"))
	if len(c.Parameters) == 0 {
		return errs
	}
	for k := range c.Parameters {
		if k == "" {
			errs = append(errs, field.Invalid(field.NewPath("parameters"), k, "must not be empty"))
		}
	}
	return errs
}

func (volumeAttributesClassStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	c, prev := obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
	errs := immutable(c.DriverName != prev.DriverName, field.NewPath("driverName"), c.DriverName)
	return append(errs, immutable(!apiequality.Semantic.DeepEqual(c.Parameters, prev.Parameters), field.NewPath("parameters"), c.Parameters)...)
}

func (volumeAttachmentStrategy) keepsMetadataOnStatus() {}
