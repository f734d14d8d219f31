package registry

import (
	"encoding/json"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// autoscaling/v1 holds a CPU utilization target and nothing else; what
// v2 holds besides travels through v1 in annotations, as kube-apiserver
// carries it: the other metrics and the current ones in the v1 shape of
// metrics (autoscalingv1.MetricSpec), the behavior and the conditions as
// v2 spells them. A v1 client that sends them back loses nothing.
const (
	metricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	currentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	conditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	behaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

var roundTripAnnotations = []string{metricsAnnotation, currentMetricsAnnotation, conditionsAnnotation, behaviorAnnotation}

// AddAutoscalerConversions registers in s the conversions between
// autoscaling/v1 and autoscaling/v2 HorizontalPodAutoscalers.
func AddAutoscalerConversions(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
		autoscalerToV2(a.(*autoscalingv1.HorizontalPodAutoscaler), b.(*autoscalingv2.HorizontalPodAutoscaler))
		return nil
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
		return autoscalerToV1(a.(*autoscalingv2.HorizontalPodAutoscaler), b.(*autoscalingv1.HorizontalPodAutoscaler))
	})
}

func autoscalerToV1(in *autoscalingv2.HorizontalPodAutoscaler, out *autoscalingv1.HorizontalPodAutoscaler) error {
	*out = autoscalingv1.HorizontalPodAutoscaler{TypeMeta: out.TypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas: in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime: in.Status.LastScaleTime, CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas},
	}
	dropRoundTripAnnotations(&out.ObjectMeta)
	var others []autoscalingv1.MetricSpec
	for i := range in.Spec.Metrics {
		m := &in.Spec.Metrics[i]
		if u := cpuUtilizationOf(m); u != nil {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = ptrCopy(u)
			}
			continue
		}
		others = append(others, metricSpecToV1(m))
	}
	current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
	for i := range in.Status.CurrentMetrics {
		st := &in.Status.CurrentMetrics[i]
		current[i] = metricStatusToV1(st)
		if st.Type == autoscalingv2.ResourceMetricSourceType && st.Resource != nil && st.Resource.Name == corev1.ResourceCPU && st.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptrCopy(st.Resource.Current.AverageUtilization)
		}
	}
	return setAnnotations(&out.ObjectMeta, map[string]any{
		metricsAnnotation: others, currentMetricsAnnotation: current, conditionsAnnotation: in.Status.Conditions, behaviorAnnotation: in.Spec.Behavior,
	})
}

func cpuUtilizationOf(m *autoscalingv2.MetricSpec) *int32 {
	if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
		return m.Resource.Target.AverageUtilization
	}
	return nil
}

func ptrCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func dropRoundTripAnnotations(m *metav1.ObjectMeta) {
	for _, k := range roundTripAnnotations {
		delete(m.Annotations, k)
	}
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
}

// setAnnotations stores each non-empty value as JSON under its key.
func setAnnotations(m *metav1.ObjectMeta, values map[string]any) error {
	for key, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if s := string(data); s == "null" || s == "[]" {
			continue
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[key] = string(data)
	}
	return nil
}

func autoscalerToV2(in *autoscalingv1.HorizontalPodAutoscaler, out *autoscalingv2.HorizontalPodAutoscaler) {
	*out = autoscalingv2.HorizontalPodAutoscaler{TypeMeta: out.TypeMeta, ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas: in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime: in.Status.LastScaleTime, CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas},
	}
	var others []autoscalingv1.MetricSpec
	if fromAnnotation(in.Annotations, metricsAnnotation, &others) {
		for i := range others {
			out.Spec.Metrics = append(out.Spec.Metrics, metricSpecToV2(&others[i]))
		}
	}
	if u := in.Spec.TargetCPUUtilizationPercentage; u != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, cpuUtilization(*u))
	}
	if len(out.Spec.Metrics) == 0 {
		// v1's implicit target, explicit in v2.
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	var behavior autoscalingv2.HorizontalPodAutoscalerBehavior
	if fromAnnotation(in.Annotations, behaviorAnnotation, &behavior) && (behavior.ScaleUp != nil || behavior.ScaleDown != nil) {
		out.Spec.Behavior = &behavior
	}
	var current []autoscalingv1.MetricStatus
	if fromAnnotation(in.Annotations, currentMetricsAnnotation, &current) {
		for i := range current {
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusToV2(&current[i]))
		}
	} else if u := in.Status.CurrentCPUUtilizationPercentage; u != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptrCopy(u)}}}}
	}
	fromAnnotation(in.Annotations, conditionsAnnotation, &out.Status.Conditions)
	dropRoundTripAnnotations(&out.ObjectMeta)
}

// fromAnnotation decodes annotation key into v, reporting whether it was
// there and readable (an unreadable one is dropped, as kube-apiserver
// drops it).
func fromAnnotation(annotations map[string]string, key string, v any) bool {
	s, ok := annotations[key]
	return ok && json.Unmarshal([]byte(s), v) == nil
}

func metricSpecToV1(m *autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		out.Object = &autoscalingv1.ObjectMetricSource{Target: autoscalingv1.CrossVersionObjectReference(m.Object.DescribedObject),
			MetricName: m.Object.Metric.Name, Selector: m.Object.Metric.Selector, TargetValue: quantityOf(m.Object.Target.Value),
			AverageValue: m.Object.Target.AverageValue}
	case m.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: m.Pods.Metric.Name, Selector: m.Pods.Metric.Selector,
			TargetAverageValue: quantityOf(m.Pods.Target.AverageValue)}
	case m.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: m.Resource.Name,
			TargetAverageUtilization: m.Resource.Target.AverageUtilization, TargetAverageValue: m.Resource.Target.AverageValue}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			TargetAverageUtilization: m.ContainerResource.Target.AverageUtilization, TargetAverageValue: m.ContainerResource.Target.AverageValue}
	case m.External != nil:
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: m.External.Metric.Name, MetricSelector: m.External.Metric.Selector,
			TargetValue: m.External.Target.Value, TargetAverageValue: m.External.Target.AverageValue}
	}
	return out
}

func metricSpecToV2(m *autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		out.Object = &autoscalingv2.ObjectMetricSource{DescribedObject: autoscalingv2.CrossVersionObjectReference(m.Object.Target),
			Metric: autoscalingv2.MetricIdentifier{Name: m.Object.MetricName, Selector: m.Object.Selector},
			Target: valueTarget(&m.Object.TargetValue, m.Object.AverageValue)}
	case m.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: m.Pods.MetricName, Selector: m.Pods.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptrCopy(&m.Pods.TargetAverageValue)}}
	case m.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: m.Resource.Name,
			Target: utilizationTarget(m.Resource.TargetAverageUtilization, m.Resource.TargetAverageValue)}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			Target: utilizationTarget(m.ContainerResource.TargetAverageUtilization, m.ContainerResource.TargetAverageValue)}
	case m.External != nil:
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: m.External.MetricName, Selector: m.External.MetricSelector},
			Target: valueTarget(m.External.TargetValue, m.External.TargetAverageValue)}
	}
	return out
}

// valueTarget is a target of a value, or of an average when one is set.
func valueTarget(value, average *resource.Quantity) autoscalingv2.MetricTarget {
	if average != nil {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: average, Value: value}
	}
	return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: value}
}

// utilizationTarget is a target of utilization when one is set, of an
// average value otherwise.
func utilizationTarget(utilization *int32, average *resource.Quantity) autoscalingv2.MetricTarget {
	if utilization != nil {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: utilization}
	}
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: average}
}

func quantityOf(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return q.DeepCopy()
}

func metricStatusToV1(m *autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		out.Object = &autoscalingv1.ObjectMetricStatus{Target: autoscalingv1.CrossVersionObjectReference(m.Object.DescribedObject),
			MetricName: m.Object.Metric.Name, Selector: m.Object.Metric.Selector, CurrentValue: quantityOf(m.Object.Current.Value),
			AverageValue: m.Object.Current.AverageValue}
	case m.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: m.Pods.Metric.Name, Selector: m.Pods.Metric.Selector,
			CurrentAverageValue: quantityOf(m.Pods.Current.AverageValue)}
	case m.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: m.Resource.Name, CurrentAverageUtilization: m.Resource.Current.AverageUtilization,
			CurrentAverageValue: quantityOf(m.Resource.Current.AverageValue)}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			CurrentAverageUtilization: m.ContainerResource.Current.AverageUtilization, CurrentAverageValue: quantityOf(m.ContainerResource.Current.AverageValue)}
	case m.External != nil:
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: m.External.Metric.Name, MetricSelector: m.External.Metric.Selector,
			CurrentValue: quantityOf(m.External.Current.Value), CurrentAverageValue: m.External.Current.AverageValue}
	}
	return out
}

func metricStatusToV2(m *autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	switch {
	case m.Object != nil:
		out.Object = &autoscalingv2.ObjectMetricStatus{DescribedObject: autoscalingv2.CrossVersionObjectReference(m.Object.Target),
			Metric:  autoscalingv2.MetricIdentifier{Name: m.Object.MetricName, Selector: m.Object.Selector},
			Current: autoscalingv2.MetricValueStatus{Value: ptrCopy(&m.Object.CurrentValue), AverageValue: m.Object.AverageValue}}
	case m.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: m.Pods.MetricName, Selector: m.Pods.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptrCopy(&m.Pods.CurrentAverageValue)}}
	case m.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: m.Resource.Name,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: m.Resource.CurrentAverageUtilization, AverageValue: ptrCopy(&m.Resource.CurrentAverageValue)}}
	case m.ContainerResource != nil:
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: m.ContainerResource.CurrentAverageUtilization, AverageValue: ptrCopy(&m.ContainerResource.CurrentAverageValue)}}
	case m.External != nil:
		out.External = &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: m.External.MetricName, Selector: m.External.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ptrCopy(&m.External.CurrentValue), AverageValue: m.External.CurrentAverageValue}}
	}
	return out
}
