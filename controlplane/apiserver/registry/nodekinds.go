package registry

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeClasses name the container runtime handler a pod runs with, the
// overhead its sandbox costs and where such pods may be scheduled; pods
// take them at admission (admission.go).
type runtimeClassStrategy struct{ BaseStrategy }

func (runtimeClassStrategy) Validate(obj runtime.Object) field.ErrorList {
	rc := obj.(*nodev1.RuntimeClass)
	errs := validateDNSLabel(rc.Handler, field.NewPath("handler"))
	if rc.Overhead != nil {
		errs = append(errs, validateResources(&corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed},
			field.NewPath("overhead", "podFixed"))...)
	}
	if s := rc.Scheduling; s != nil {
		errs = append(errs, validateLabels(s.NodeSelector, field.NewPath("scheduling", "nodeSelector"))...)
		errs = append(errs, validateTolerations(s.Tolerations, field.NewPath("scheduling", "tolerations"))...)
	}
	return errs
}

func (s runtimeClassStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	rc, prev := obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass)
	return immutable(rc.Handler != prev.Handler, field.NewPath("handler"), rc.Handler)
}

func (runtimeClassStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Handler", "string", "The runtime handler of the class."), ageColumn}
}

func (runtimeClassStrategy) Row(obj runtime.Object) []any {
	rc := obj.(*nodev1.RuntimeClass)
	return []any{rc.Name, rc.Handler, age(rc.CreationTimestamp)}
}

// PodTemplates are pod templates stored on their own (for tools to use).
type podTemplateStrategy struct{ BaseStrategy }

func (podTemplateStrategy) PrepareForCreate(obj runtime.Object) {
	defaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec)
}

func (podTemplateStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec)
}

func (podTemplateStrategy) Validate(obj runtime.Object) field.ErrorList {
	t := obj.(*corev1.PodTemplate).Template
	path := field.NewPath("template")
	errs := validateLabels(t.Labels, path.Child("metadata", "labels"))
	return append(errs, validatePodSpec(&t.Spec, path.Child("spec"))...)
}

// SpecChanged: a PodTemplate has no spec; its generation counts changes
// of its template.
func (podTemplateStrategy) specChanged(obj, old runtime.Object) bool {
	return !apiequality.Semantic.DeepEqual(obj.(*corev1.PodTemplate).Template, old.(*corev1.PodTemplate).Template)
}

func (podTemplateStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		column("Containers", "string", "The template's containers."), column("Images", "string", "Their images."),
		column("Pod Labels", "string", "The labels of the template's pods."), ageColumn}
}

func (podTemplateStrategy) Row(obj runtime.Object) []any {
	t := obj.(*corev1.PodTemplate)
	cells := workloadCells(&t.Template, nil)
	return []any{t.Name, cells[0], cells[1], orNone(labels.FormatLabels(t.Template.Labels)), age(t.CreationTimestamp)}
}
