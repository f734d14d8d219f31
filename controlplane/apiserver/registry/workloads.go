package registry

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validateWorkload checks what ReplicaSets, Deployments and DaemonSets
// (noun, in messages) share: replicas, a selector that matches the
// template's labels, and a pod template whose containers restart Always.
func validateWorkload(noun string, replicas *int32, sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, minReady int32) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if replicas != nil {
		errs = append(errs, validateNonNegative(int64(*replicas), spec.Child("replicas"))...)
	}
	errs = append(errs, validateNonNegative(int64(minReady), spec.Child("minReadySeconds"))...)
	switch {
	case sel == nil:
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	case len(sel.MatchLabels)+len(sel.MatchExpressions) == 0:
		errs = append(errs, field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for "+noun))
	default:
		errs = append(errs, validateLabelSelector(sel, spec.Child("selector"))...)
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && !s.Matches(labels.Set(tmpl.Labels)) {
			errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
		}
	}
	tpath := spec.Child("template")
	errs = append(errs, validateLabels(tmpl.Labels, tpath.Child("metadata", "labels"))...)
	errs = append(errs, validatePodSpec(&tmpl.Spec, tpath.Child("spec"))...)
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tpath.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tpath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

func selectorImmutable(sel, old *metav1.LabelSelector) field.ErrorList {
	return immutable(!apiequality.Semantic.DeepEqual(sel, old), field.NewPath("spec", "selector"), metav1.FormatLabelSelector(sel))
}

// workloadCells are the wide columns ReplicaSets and Deployments share.
func workloadCells(tmpl *corev1.PodTemplateSpec, sel *metav1.LabelSelector) []any {
	var names, images []string
	for _, c := range tmpl.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	return []any{strings.Join(names, ","), strings.Join(images, ","), metav1.FormatLabelSelector(sel)}
}

var workloadWideColumns = []metav1.TableColumnDefinition{
	wideColumn("Containers", "string", "Names of each container in the template."),
	wideColumn("Images", "string", "Images referenced by each container in the template."),
	wideColumn("Selector", "string", "Label selector for pods."),
}

func scaleFor(replicas *int32, status int32, sel *metav1.LabelSelector) autoscalingv1.Scale {
	sc := autoscalingv1.Scale{Status: autoscalingv1.ScaleStatus{Replicas: status}}
	if replicas != nil {
		sc.Spec.Replicas = *replicas
	}
	if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
		sc.Status.Selector = s.String()
	}
	return sc
}

type replicaSetStrategy struct{ BaseStrategy }

// Fields are kube-apiserver's for ReplicaSets.
func (replicaSetStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
}

var _ Scaler = replicaSetStrategy{}

func (replicaSetStrategy) PrepareForCreate(obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	defaultReplicaSet(rs)
	rs.Status = appsv1.ReplicaSetStatus{}
}

func defaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	defaultPodSpec(&rs.Spec.Template.Spec)
}

func (replicaSetStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultReplicaSet(obj.(*appsv1.ReplicaSet))
}

func (replicaSetStrategy) Validate(obj runtime.Object) field.ErrorList {
	rs := obj.(*appsv1.ReplicaSet)
	return validateWorkload("deployment", rs.Spec.Replicas, rs.Spec.Selector, &rs.Spec.Template, rs.Spec.MinReadySeconds)
}

func (replicaSetStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return selectorImmutable(obj.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector)
}

func (replicaSetStrategy) Scale(obj runtime.Object) autoscalingv1.Scale {
	rs := obj.(*appsv1.ReplicaSet)
	return scaleFor(rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector)
}

func (replicaSetStrategy) SetReplicas(obj runtime.Object, n int32) {
	obj.(*appsv1.ReplicaSet).Spec.Replicas = &n
}

func (replicaSetStrategy) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition{
		nameColumn,
		column("Desired", "integer", "Number of desired pods."),
		column("Current", "integer", "Number of actually running pods."),
		column("Ready", "integer", "Number of ready pods."),
		ageColumn,
	}, workloadWideColumns...)
}

func (replicaSetStrategy) Row(obj runtime.Object) []any {
	rs := obj.(*appsv1.ReplicaSet)
	return append([]any{rs.Name, int64(*rs.Spec.Replicas), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), age(rs.CreationTimestamp)},
		workloadCells(&rs.Spec.Template, rs.Spec.Selector)...)
}

type deploymentStrategy struct{ BaseStrategy }

var _ Scaler = deploymentStrategy{}

func (deploymentStrategy) PrepareForCreate(obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	defaultDeployment(d)
	d.Status = appsv1.DeploymentStatus{}
}

func defaultDeployment(d *appsv1.Deployment) {
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		quarter := intstr.FromString("25%")
		if spec.Strategy.RollingUpdate.MaxUnavailable == nil {
			spec.Strategy.RollingUpdate.MaxUnavailable = &quarter
		}
		if spec.Strategy.RollingUpdate.MaxSurge == nil {
			spec.Strategy.RollingUpdate.MaxSurge = ptr.To(quarter)
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	defaultPodSpec(&spec.Template.Spec)
}

func (deploymentStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultDeployment(obj.(*appsv1.Deployment))
}

func (deploymentStrategy) Validate(obj runtime.Object) field.ErrorList {
	d := obj.(*appsv1.Deployment)
	errs := validateWorkload("deployment", d.Spec.Replicas, d.Spec.Selector, &d.Spec.Template, d.Spec.MinReadySeconds)
	return append(errs, validateDeploymentStrategy(&d.Spec)...)
}

func validateDeploymentStrategy(spec *appsv1.DeploymentSpec) field.ErrorList {
	path := field.NewPath("spec", "strategy")
	errs := validateOneOf(spec.Strategy.Type, path.Child("type"), appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType)
	ru := spec.Strategy.RollingUpdate
	switch {
	case spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && ru != nil:
		errs = append(errs, field.Forbidden(path.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
	case ru != nil:
		surge, errS := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 100, true)
		unavailable, errU := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, 100, false)
		if errS != nil || errU != nil || surge < 0 || unavailable < 0 {
			errs = append(errs, field.Invalid(path.Child("rollingUpdate"), fmt.Sprint(ru), "maxSurge and maxUnavailable must be non-negative integers or percentages"))
		} else if surge == 0 && unavailable == 0 {
			errs = append(errs, field.Invalid(path.Child("rollingUpdate", "maxUnavailable"), ru.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
		}
	}
	if p := spec.ProgressDeadlineSeconds; p != nil && *p <= spec.MinReadySeconds {
		errs = append(errs, field.Invalid(field.NewPath("spec", "progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
	}
	return errs
}

func (deploymentStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return selectorImmutable(obj.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector)
}

func (deploymentStrategy) Scale(obj runtime.Object) autoscalingv1.Scale {
	d := obj.(*appsv1.Deployment)
	return scaleFor(d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector)
}

func (deploymentStrategy) SetReplicas(obj runtime.Object, n int32) {
	obj.(*appsv1.Deployment).Spec.Replicas = &n
}

func (deploymentStrategy) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition{
		nameColumn,
		column("Ready", "string", "Number of the pod with ready state."),
		column("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
		column("Available", "string", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
		ageColumn,
	}, workloadWideColumns...)
}

func (deploymentStrategy) Row(obj runtime.Object) []any {
	d := obj.(*appsv1.Deployment)
	return append([]any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, *d.Spec.Replicas), int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas), age(d.CreationTimestamp)}, workloadCells(&d.Spec.Template, d.Spec.Selector)...)
}
