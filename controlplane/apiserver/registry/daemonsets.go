package registry

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// DaemonSets and ControllerRevisions (apps/v1) are kube-apiserver's: a
// DaemonSet rolls out one at a time by default, counts its template's
// changes in spec.templateGeneration, and keeps its history in
// ControllerRevisions, whose data never changes.

type daemonSetStrategy struct{ BaseStrategy }

func (daemonSetStrategy) PrepareForCreate(obj runtime.Object) {
	ds := obj.(*appsv1.DaemonSet)
	defaultDaemonSet(ds)
	setTemplateGeneration(ds, 1)
	ds.Status = appsv1.DaemonSetStatus{}
}

func defaultDaemonSet(ds *appsv1.DaemonSet) {
	spec := &ds.Spec
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		ru := spec.UpdateStrategy.RollingUpdate
		if ru == nil {
			ru = &appsv1.RollingUpdateDaemonSet{}
			spec.UpdateStrategy.RollingUpdate = ru
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	defaultPodSpec(&spec.Template.Spec)
}

// templateGenerationAnnotation is where apps/v1 keeps the count of a
// DaemonSet's template changes (the internal spec.templateGeneration).
const templateGenerationAnnotation = appsv1.DeprecatedTemplateGeneration

func setTemplateGeneration(ds *appsv1.DaemonSet, n int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[templateGenerationAnnotation] = strconv.FormatInt(n, 10)
}

// PrepareForUpdate defaults the spec and counts a template change in the
// template generation, which clients may not set.
func (daemonSetStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	defaultDaemonSet(ds)
	gen, _ := strconv.ParseInt(o.Annotations[templateGenerationAnnotation], 10, 64)
	if !apiequality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template) {
		gen++
	}
	setTemplateGeneration(ds, gen)
}

func (daemonSetStrategy) Validate(obj runtime.Object) field.ErrorList {
	ds := obj.(*appsv1.DaemonSet)
	errs := validateWorkload("daemonset", nil, ds.Spec.Selector, &ds.Spec.Template, ds.Spec.MinReadySeconds)
	return append(errs, validateDaemonSetStrategy(&ds.Spec.UpdateStrategy)...)
}

func validateDaemonSetStrategy(st *appsv1.DaemonSetUpdateStrategy) field.ErrorList {
	path := field.NewPath("spec", "updateStrategy")
	errs := validateOneOf(st.Type, path.Child("type"), appsv1.OnDeleteDaemonSetStrategyType, appsv1.RollingUpdateDaemonSetStrategyType)
	ru := st.RollingUpdate
	switch {
	case st.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru == nil:
		return append(errs, field.Required(path.Child("rollingUpdate"), ""))
	case ru == nil:
		return errs
	}
	rpath := path.Child("rollingUpdate")
	var set [2]bool
	for i, f := range []struct {
		name string
		v    *intstr.IntOrString
	}{{"maxUnavailable", ru.MaxUnavailable}, {"maxSurge", ru.MaxSurge}} {
		if f.v == nil {
			continue
		}
		errs = append(errs, validateCountOrPercent(*f.v, rpath.Child(f.name))...)
		n, err := intstr.GetScaledValueFromIntOrPercent(f.v, 100, true)
		set[i] = err == nil && n != 0
	}
	switch {
	case set[0] && set[1]:
		errs = append(errs, field.Invalid(rpath.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
	case !set[0] && !set[1]:
		errs = append(errs, field.Required(rpath.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

func (daemonSetStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return selectorImmutable(obj.(*appsv1.DaemonSet).Spec.Selector, old.(*appsv1.DaemonSet).Spec.Selector)
}

func (daemonSetStrategy) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition{
		nameColumn,
		column("Desired", "integer", "The desired number of pods."),
		column("Current", "integer", "The current number of pods."),
		column("Ready", "integer", "The number of pods ready."),
		column("Up-to-date", "integer", "The number of pods updated."),
		column("Available", "integer", "The number of pods ready for at least minReadySeconds."),
		column("Node Selector", "string", "The node selector of the pods' template."),
		ageColumn,
	}, workloadWideColumns...)
}

func (daemonSetStrategy) Row(obj runtime.Object) []any {
	ds := obj.(*appsv1.DaemonSet)
	st := &ds.Status
	return append([]any{ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector), age(ds.CreationTimestamp)},
		workloadCells(&ds.Spec.Template, ds.Spec.Selector)...)
}

type controllerRevisionStrategy struct{ BaseStrategy }

// specChanged: a ControllerRevision has no spec; its revision counts.
func (controllerRevisionStrategy) specChanged(obj, old runtime.Object) bool {
	return obj.(*appsv1.ControllerRevision).Revision != old.(*appsv1.ControllerRevision).Revision
}

func (controllerRevisionStrategy) Validate(obj runtime.Object) field.ErrorList {
	cr := obj.(*appsv1.ControllerRevision)
	errs := validateNonNegative(cr.Revision, field.NewPath("revision"))
	if cr.Data.Raw == nil && cr.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return errs
}

func (controllerRevisionStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cr, o := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
	return immutable(!apiequality.Semantic.DeepEqual(cr.Data, o.Data), field.NewPath("data"), field.OmitValueType{})
}

func (controllerRevisionStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		column("Controller", "string", "Controller of the object."),
		column("Revision", "integer", "Revision of the ControllerRevision."),
		ageColumn,
	}
}

func (controllerRevisionStrategy) Row(obj runtime.Object) []any {
	cr := obj.(*appsv1.ControllerRevision)
	controller := "<none>"
	if ref := metav1.GetControllerOf(cr); ref != nil {
		kind := strings.ToLower(ref.Kind)
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group != "" {
			kind += "." + gv.Group
		}
		controller = kind + "/" + ref.Name
	}
	return []any{cr.Name, controller, cr.Revision, age(cr.CreationTimestamp)}
}
