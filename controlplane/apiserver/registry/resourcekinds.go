package registry

import (
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The resource.k8s.io kinds of dynamic resource allocation are served as
// API objects: DRA drivers publish ResourceSlices, users claim devices.
// skiff's scheduler does not allocate claims (yet): a pod that names one
// stays pending, as on a cluster without a DRA driver.

type deviceClassStrategy struct{ BaseStrategy }

type deviceTaintRuleStrategy struct{ BaseStrategy }

func (deviceTaintRuleStrategy) Validate(obj runtime.Object) field.ErrorList {
	t := obj.(*resourcev1.DeviceTaintRule).Spec.Taint
	path := field.NewPath("spec", "taint")
	errs := validateQualifiedName(t.Key, path.Child("key"))
	return append(errs, validateOneOf(t.Effect, path.Child("effect"), resourcev1.DeviceTaintEffectNoSchedule,
		resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone)...)
}

type resourceClaimStrategy struct{ BaseStrategy }

func (resourceClaimStrategy) PrepareForCreate(obj runtime.Object) {
	c := obj.(*resourcev1.ResourceClaim)
	c.Status = resourcev1.ResourceClaimStatus{}
	defaultClaimSpec(&c.Spec)
}

func (resourceClaimStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultClaimSpec(&obj.(*resourcev1.ResourceClaim).Spec)
}

func (resourceClaimStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateClaimSpec(&obj.(*resourcev1.ResourceClaim).Spec, field.NewPath("spec"))
}

// ValidateUpdate: a claim's spec is fixed once made.
func (resourceClaimStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, prev := obj.(*resourcev1.ResourceClaim).Spec, old.(*resourcev1.ResourceClaim).Spec
	return immutable(!apiequality.Semantic.DeepEqual(s, prev), field.NewPath("spec"), "")
}

type resourceClaimTemplateStrategy struct{ BaseStrategy }

func (resourceClaimTemplateStrategy) PrepareForCreate(obj runtime.Object) {
	defaultClaimSpec(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
}

func (resourceClaimTemplateStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultClaimSpec(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
}

func (resourceClaimTemplateStrategy) Validate(obj runtime.Object) field.ErrorList {
	t := obj.(*resourcev1.ResourceClaimTemplate)
	errs := validateLabels(t.Spec.Labels, field.NewPath("spec", "metadata", "labels"))
	return append(errs, validateClaimSpec(&t.Spec.Spec, field.NewPath("spec", "spec"))...)
}

func (resourceClaimTemplateStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, prev := obj.(*resourcev1.ResourceClaimTemplate).Spec, old.(*resourcev1.ResourceClaimTemplate).Spec
	return immutable(!apiequality.Semantic.DeepEqual(s, prev), field.NewPath("spec"), "")
}

// defaultClaimSpec: an exact request is for one device unless it says
// otherwise.
func defaultClaimSpec(s *resourcev1.ResourceClaimSpec) {
	for i := range s.Devices.Requests {
		if e := s.Devices.Requests[i].Exactly; e != nil {
			if e.AllocationMode == "" {
				e.AllocationMode = resourcev1.DeviceAllocationModeExactCount
			}
			if e.AllocationMode == resourcev1.DeviceAllocationModeExactCount && e.Count == 0 {
				e.Count = 1
			}
		}
	}
}

func validateClaimSpec(s *resourcev1.ResourceClaimSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, r := range s.Devices.Requests {
		rp := path.Child("devices", "requests").Index(i)
		errs = append(errs, validateDNSLabel(r.Name, rp.Child("name"))...)
		if names.Has(r.Name) {
			errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
		}
		names.Insert(r.Name)
		switch {
		case (r.Exactly == nil) == (len(r.FirstAvailable) == 0):
			errs = append(errs, field.Required(rp, "exactly one of `exactly` or `firstAvailable` is required"))
		case r.Exactly != nil:
			errs = append(errs, validateExactRequest(r.Exactly, rp.Child("exactly"))...)
		}
	}
	return errs
}

func validateExactRequest(e *resourcev1.ExactDeviceRequest, path *field.Path) field.ErrorList {
	errs := requiredDNSSubdomain(e.DeviceClassName, path.Child("deviceClassName"))
	errs = append(errs, validateOneOf(e.AllocationMode, path.Child("allocationMode"),
		resourcev1.DeviceAllocationModeExactCount, resourcev1.DeviceAllocationModeAll)...)
	if e.AllocationMode == resourcev1.DeviceAllocationModeExactCount && e.Count <= 0 {
		errs = append(errs, field.Invalid(path.Child("count"), e.Count, "must be greater than zero"))
	}
	return errs
}

type resourceSliceStrategy struct{ BaseStrategy }

func (resourceSliceStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*resourcev1.ResourceSlice).Spec
	path := field.NewPath("spec")
	errs := validateDNSSubdomain(s.Driver, path.Child("driver"))
	if s.Pool.Name == "" {
		errs = append(errs, field.Required(path.Child("pool", "name"), ""))
	}
	errs = append(errs, validateNonNegative(s.Pool.Generation, path.Child("pool", "generation"))...)
	if s.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(path.Child("pool", "resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	n := 0
	for _, set := range []bool{s.NodeName != nil, s.NodeSelector != nil, s.AllNodes != nil && *s.AllNodes,
		s.PerDeviceNodeSelection != nil && *s.PerDeviceNodeSelection} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs = append(errs, field.Invalid(path, "", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	}
	if s.NodeName != nil {
		errs = append(errs, requiredDNSSubdomain(*s.NodeName, path.Child("nodeName"))...)
	}
	names := sets.New[string]()
	for i, d := range s.Devices {
		dp := path.Child("devices").Index(i).Child("name")
		errs = append(errs, validateDNSLabel(d.Name, dp)...)
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(dp, d.Name))
		}
		names.Insert(d.Name)
	}
	return errs
}

func (resourceSliceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, prev := obj.(*resourcev1.ResourceSlice).Spec, old.(*resourcev1.ResourceSlice).Spec
	errs := immutable(s.Driver != prev.Driver, field.NewPath("spec", "driver"), s.Driver)
	return append(errs, immutable(!apiequality.Semantic.DeepEqual(s.NodeName, prev.NodeName), field.NewPath("spec", "nodeName"), "")...)
}

// Fields are kube-apiserver's for ResourceSlices.
func (resourceSliceStrategy) Fields(obj runtime.Object) fields.Set {
	s := obj.(*resourcev1.ResourceSlice).Spec
	node := ""
	if s.NodeName != nil {
		node = *s.NodeName
	}
	return fields.Set{"spec.nodeName": node, "spec.driver": s.Driver, "spec.pool.name": s.Pool.Name}
}

func (resourceClaimStrategy) keepsMetadataOnStatus()   {}
func (deviceTaintRuleStrategy) keepsMetadataOnStatus() {}
