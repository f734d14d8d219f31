package registry

import (
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// HorizontalPodAutoscalers are served as autoscaling/v2 and, for older
// clients, autoscaling/v1 (CPU utilization only; the rest rides in
// annotations, hpaconversion.go), one object under one key whichever
// wrote it, as kube-apiserver serves them.

const (
	defaultCPUUtilization    = 80
	maxStabilizationSeconds  = 3600
	maxScalingPolicyPeriod   = 1800
	metricPopulatedMessage   = "must populate information for the given metric source"
	targetUtilizationMessage = "must set either a target raw value or a target utilization"
)

type autoscalerStrategy struct{ BaseStrategy }

var _ SubresourceValidator = autoscalerStrategy{}

func (autoscalerStrategy) PrepareForCreate(obj runtime.Object) {
	hpa := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	DefaultAutoscaler(hpa)
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
}

func (autoscalerStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	DefaultAutoscaler(obj.(*autoscalingv2.HorizontalPodAutoscaler))
}

// DefaultAutoscaler fills in an autoscaling/v2 HorizontalPodAutoscaler as
// the API defaults it: one replica at least, 80% CPU when it names no
// metric, and the default scaling rules of each direction it sets.
func DefaultAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	spec := &hpa.Spec
	if spec.MinReplicas == nil {
		spec.MinReplicas = ptr.To[int32](1)
	}
	if len(spec.Metrics) == 0 {
		spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	if b := spec.Behavior; b != nil {
		b.ScaleUp = withDefaultRules(b.ScaleUp, ScaleUpRules())
		b.ScaleDown = withDefaultRules(b.ScaleDown, ScaleDownRules())
	}
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent}}}
}

// ScaleUpRules are the rules of an autoscaler that sets none for scaling
// up: at once, by 4 pods or doubling (the larger) per 15 seconds.
func ScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
}

// ScaleDownRules are the rules of an autoscaler that sets none for
// scaling down: to the lowest recommendation of the controller's window,
// by up to all pods per 15 seconds.
func ScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
}

func withDefaultRules(set, defaults *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if set == nil {
		return defaults
	}
	if set.SelectPolicy == nil {
		set.SelectPolicy = defaults.SelectPolicy
	}
	if set.Policies == nil {
		set.Policies = defaults.Policies
	}
	if set.StabilizationWindowSeconds == nil {
		set.StabilizationWindowSeconds = defaults.StabilizationWindowSeconds
	}
	return set
}

func (autoscalerStrategy) Validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec
	path := field.NewPath("spec")
	errs := validateReplicaBounds(spec.MinReplicas, spec.MaxReplicas, path)
	errs = append(errs, validateScaleTargetRef(spec.ScaleTargetRef.Kind, spec.ScaleTargetRef.Name, path.Child("scaleTargetRef"))...)
	for i := range spec.Metrics {
		errs = append(errs, validateMetricSpec(&spec.Metrics[i], path.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, path.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, path.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func (autoscalerStrategy) ValidateSubresourceUpdate(_ string, obj, _ runtime.Object) field.ErrorList {
	st := &obj.(*autoscalingv2.HorizontalPodAutoscaler).Status
	return validateAutoscalerReplicas(st.CurrentReplicas, st.DesiredReplicas)
}

func validateAutoscalerReplicas(current, desired int32) field.ErrorList {
	path := field.NewPath("status")
	errs := validateNonNegative(int64(current), path.Child("currentReplicas"))
	return append(errs, validateNonNegative(int64(desired), path.Child("desiredReplicas"))...)
}

func validateReplicaBounds(minReplicas *int32, maxReplicas int32, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if minReplicas != nil && *minReplicas < 1 {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *minReplicas, "must be greater than or equal to 1"))
	}
	switch {
	case maxReplicas == 0:
		errs = append(errs, field.Required(path.Child("maxReplicas"), "must be set and greater than 0"))
	case maxReplicas < 0:
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), maxReplicas, "must be greater than or equal to 1"))
	}
	if minReplicas != nil && maxReplicas < *minReplicas {
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), maxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	return errs
}

func validateScaleTargetRef(kind, name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for child, v := range map[string]string{"kind": kind, "name": name} {
		if v == "" {
			errs = append(errs, field.Required(path.Child(child), ""))
		} else if strings.ContainsAny(v, "/%") || v == "." || v == ".." {
			errs = append(errs, field.Invalid(path.Child(child), v, "may not contain '/' or '%' and may not be '.' or '..'"))
		}
	}
	return errs
}

// metricSource is the one source a metric's type names, and the target
// of that source (nil when the source is missing).
func metricSource(m *autoscalingv2.MetricSpec) (name string, target *autoscalingv2.MetricTarget) {
	switch m.Type {
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object != nil {
			return "object", &m.Object.Target
		}
		return "object", nil
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods != nil {
			return "pods", &m.Pods.Target
		}
		return "pods", nil
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource != nil {
			return "resource", &m.Resource.Target
		}
		return "resource", nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource != nil {
			return "containerResource", &m.ContainerResource.Target
		}
		return "containerResource", nil
	case autoscalingv2.ExternalMetricSourceType:
		if m.External != nil {
			return "external", &m.External.Target
		}
		return "external", nil
	}
	return "", nil
}

var metricSourceTypes = []autoscalingv2.MetricSourceType{autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType,
	autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType}

func validateMetricSpec(m *autoscalingv2.MetricSpec, path *field.Path) field.ErrorList {
	if m.Type == "" {
		return field.ErrorList{field.Required(path.Child("type"), "must specify a metric source type")}
	}
	name, target := metricSource(m)
	if name == "" {
		return field.ErrorList{field.NotSupported(path.Child("type"), m.Type, metricSourceTypes)}
	}
	if target == nil {
		return field.ErrorList{field.Required(path.Child(name), metricPopulatedMessage)}
	}
	var errs field.ErrorList
	populated := map[string]bool{"object": m.Object != nil, "pods": m.Pods != nil, "resource": m.Resource != nil,
		"containerResource": m.ContainerResource != nil, "external": m.External != nil}
	for other, set := range populated {
		if set && other != name {
			errs = append(errs, field.Forbidden(path.Child(other), "must populate the given metric source only"))
		}
	}
	tpath := path.Child(name, "target")
	errs = append(errs, validateMetricTarget(target, tpath)...)
	switch {
	case m.Resource != nil && m.Resource.Name == "", m.ContainerResource != nil && m.ContainerResource.Name == "":
		errs = append(errs, field.Required(path.Child(name, "name"), "must specify a resource name"))
	case m.ContainerResource != nil && m.ContainerResource.Container == "":
		errs = append(errs, field.Required(path.Child(name, "container"), "must specify a container"))
	}
	if name == "resource" || name == "containerResource" {
		if target.AverageUtilization == nil && target.AverageValue == nil {
			errs = append(errs, field.Required(tpath.Child("averageUtilization"), targetUtilizationMessage))
		}
		if target.AverageUtilization != nil && target.AverageValue != nil {
			errs = append(errs, field.Forbidden(tpath.Child("averageValue"), "may not set both a target raw value and a target utilization"))
		}
	}
	return errs
}

func validateMetricTarget(t *autoscalingv2.MetricTarget, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch t.Type {
	case "":
		errs = append(errs, field.Required(path.Child("type"), "must specify a metric target type"))
	case autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType:
	default:
		errs = append(errs, field.Invalid(path.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	for name, q := range map[string]*resource.Quantity{"value": t.Value, "averageValue": t.AverageValue} {
		if q != nil && q.Sign() <= 0 {
			errs = append(errs, field.Invalid(path.Child(name), q.String(), "must be positive"))
		}
	}
	if u := t.AverageUtilization; u != nil && *u < 1 {
		errs = append(errs, field.Invalid(path.Child("averageUtilization"), *u, "must be greater than 0"))
	}
	return errs
}

var selectPolicies = []autoscalingv2.ScalingPolicySelect{autoscalingv2.DisabledPolicySelect, autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > maxStabilizationSeconds) {
		errs = append(errs, field.Invalid(path.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be between 0 and %d", maxStabilizationSeconds)))
	}
	if p := r.SelectPolicy; p != nil {
		errs = append(errs, validateOneOf(*p, path.Child("selectPolicy"), selectPolicies...)...)
	}
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(path.Child("policies"), "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		ppath := path.Child("policies").Index(i)
		errs = append(errs, validateOneOf(p.Type, ppath.Child("type"), autoscalingv2.PercentScalingPolicy, autoscalingv2.PodsScalingPolicy)...)
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(ppath.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 || p.PeriodSeconds > maxScalingPolicyPeriod {
			errs = append(errs, field.Invalid(ppath.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be greater than zero and less than or equal to %d", maxScalingPolicyPeriod)))
		}
	}
	if r.Tolerance != nil && r.Tolerance.Sign() < 0 {
		errs = append(errs, field.Invalid(path.Child("tolerance"), r.Tolerance.String(), "must be greater than or equal to 0"))
	}
	return errs
}

func (autoscalerStrategy) Columns() []metav1.TableColumnDefinition { return autoscalerColumns }

var autoscalerColumns = []metav1.TableColumnDefinition{
	nameColumn,
	column("Reference", "string", "Reference to the object whose scale this autoscaler controls."),
	column("Targets", "string", "The current and target values of the metrics the autoscaler scales on."),
	column("MinPods", "string", "Lower limit for the number of pods that can be set by the autoscaler, default 1."),
	column("MaxPods", "integer", "Upper limit for the number of pods that can be set by the autoscaler."),
	column("Replicas", "integer", "Current number of replicas of pods managed by this autoscaler."),
	ageColumn,
}

func (autoscalerStrategy) Row(obj runtime.Object) []any {
	return autoscalerRow(obj.(*autoscalingv2.HorizontalPodAutoscaler))
}

func autoscalerRow(hpa *autoscalingv2.HorizontalPodAutoscaler) []any {
	minPods := "<unset>"
	if hpa.Spec.MinReplicas != nil {
		minPods = fmt.Sprint(*hpa.Spec.MinReplicas)
	}
	ref := hpa.Spec.ScaleTargetRef
	return []any{hpa.Name, ref.Kind + "/" + ref.Name, metricsCell(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
		int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), age(hpa.CreationTimestamp)}
}

// metricsCell is kubectl's TARGETS: each metric's current value (or
// <unknown>) over its target, the first two of them.
func metricsCell(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var cells []string
	for i := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		cells = append(cells, metricCell(&specs[i], st))
	}
	if len(cells) > 2 {
		return strings.Join(cells[:2], ", ") + fmt.Sprintf(" + %d more...", len(cells)-2)
	}
	return strings.Join(cells, ", ")
}

func metricCell(m *autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	_, target := metricSource(m)
	if target == nil {
		return "<unknown type>"
	}
	cur, prefix, avg := currentValue(m, st)
	current := "<unknown>"
	switch {
	case target.AverageValue != nil:
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return prefix + current + "/" + target.AverageValue.String() + avg
	case target.Value != nil:
		if cur != nil && cur.Value != nil {
			current = cur.Value.String()
		}
		return prefix + current + "/" + target.Value.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	goal := "<auto>"
	if target.AverageUtilization != nil {
		goal = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return prefix + current + "/" + goal
}

// currentValue is the status's current value for m, the cell's prefix
// (resource metrics name their resource) and its suffix for averages of
// object and external metrics.
func currentValue(m *autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) (*autoscalingv2.MetricValueStatus, string, string) {
	if st == nil {
		st = &autoscalingv2.MetricStatus{}
	}
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		return valueOf(st.Resource != nil, func() *autoscalingv2.MetricValueStatus { return &st.Resource.Current }), string(m.Resource.Name) + ": ", ""
	case autoscalingv2.ContainerResourceMetricSourceType:
		return valueOf(st.ContainerResource != nil, func() *autoscalingv2.MetricValueStatus { return &st.ContainerResource.Current }), string(m.ContainerResource.Name) + ": ", ""
	case autoscalingv2.PodsMetricSourceType:
		return valueOf(st.Pods != nil, func() *autoscalingv2.MetricValueStatus { return &st.Pods.Current }), "", ""
	case autoscalingv2.ObjectMetricSourceType:
		return valueOf(st.Object != nil, func() *autoscalingv2.MetricValueStatus { return &st.Object.Current }), "", " (avg)"
	}
	return valueOf(st.External != nil, func() *autoscalingv2.MetricValueStatus { return &st.External.Current }), "", " (avg)"
}

func valueOf(ok bool, get func() *autoscalingv2.MetricValueStatus) *autoscalingv2.MetricValueStatus {
	if !ok {
		return nil
	}
	return get()
}

// autoscalerV1Strategy serves the same objects as autoscaling/v1.
type autoscalerV1Strategy struct{ BaseStrategy }

var _ SubresourceValidator = autoscalerV1Strategy{}

func (autoscalerV1Strategy) PrepareForCreate(obj runtime.Object) {
	hpa := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	defaultAutoscalerV1(hpa)
	hpa.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
}

func defaultAutoscalerV1(hpa *autoscalingv1.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = ptr.To[int32](1)
	}
}

func (autoscalerV1Strategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultAutoscalerV1(obj.(*autoscalingv1.HorizontalPodAutoscaler))
}

func (autoscalerV1Strategy) Validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*autoscalingv1.HorizontalPodAutoscaler).Spec
	path := field.NewPath("spec")
	errs := validateReplicaBounds(spec.MinReplicas, spec.MaxReplicas, path)
	errs = append(errs, validateScaleTargetRef(spec.ScaleTargetRef.Kind, spec.ScaleTargetRef.Name, path.Child("scaleTargetRef"))...)
	if u := spec.TargetCPUUtilizationPercentage; u != nil && *u < 1 {
		errs = append(errs, field.Invalid(path.Child("targetCPUUtilizationPercentage"), *u, "must be greater than 0"))
	}
	return errs
}

func (autoscalerV1Strategy) ValidateSubresourceUpdate(_ string, obj, _ runtime.Object) field.ErrorList {
	st := &obj.(*autoscalingv1.HorizontalPodAutoscaler).Status
	return validateAutoscalerReplicas(st.CurrentReplicas, st.DesiredReplicas)
}

func (autoscalerV1Strategy) Columns() []metav1.TableColumnDefinition { return autoscalerColumns }

func (autoscalerV1Strategy) Row(obj runtime.Object) []any {
	var hpa autoscalingv2.HorizontalPodAutoscaler
	autoscalerToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler), &hpa)
	return autoscalerRow(&hpa)
}
