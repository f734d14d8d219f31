package podautoscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// skiff serves the resource metrics API only: Pods and Object metrics
// would come from custom.metrics.k8s.io, External ones from
// external.metrics.k8s.io.
var (
	errNoCustomMetrics   = errors.New("unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered")
	errNoExternalMetrics = errors.New("unable to fetch metrics from external metrics API: no external metrics API (external.metrics.k8s.io) registered")
)

// metricError is why one metric recommends nothing: reason is the
// warning event's and the ScalingActive condition's reason, cause what
// they report; Error names the metric too.
type metricError struct {
	reason, metric string
	cause          error
}

func (e *metricError) Error() string {
	if e.metric == "" {
		return e.cause.Error()
	}
	return e.metric + ": " + e.cause.Error()
}

func (e *metricError) Unwrap() error { return e.cause }

// recommendation is what an autoscaler's metrics recommend: the highest
// of their replica counts and the metric that recommends it. usable is
// false when the metrics recommend nothing to act on.
type recommendation struct {
	replicas int32
	metric   string
	statuses []autoscalingv2.MetricStatus
	usable   bool
}

// recommend computes every metric of the autoscaler against the target's
// pods and sets ScalingActive. A recommendation with some metrics failed
// is usable unless it would scale down: a failed metric might want more.
// The error reports the failed metrics.
func (r *run) recommend(ctx context.Context, scale *autoscalingv1.Scale) (recommendation, error) {
	sel, err := r.selector(scale.Status.Selector)
	if err != nil {
		return recommendation{}, err
	}
	specs := r.hpa.Spec.Metrics
	rec := recommendation{statuses: make([]autoscalingv2.MetricStatus, len(specs))}
	var first *metricError
	failed := 0
	for i, spec := range specs {
		replicas, metric, status, failure := r.metricReplicas(ctx, spec, scale.Spec.Replicas, sel)
		if failure != nil {
			r.warn(failure.reason, failure.cause.Error())
			if failed++; first == nil {
				first = failure
			}
			continue
		}
		rec.statuses[i] = status
		if rec.replicas == 0 || replicas > rec.replicas {
			rec.replicas, rec.metric = replicas, metric
		}
	}
	if failed > 0 {
		err = fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", failed, len(specs), first)
	}
	if failed == len(specs) || (failed > 0 && rec.replicas < scale.Spec.Replicas) {
		r.condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, first.reason, "the HPA was unable to compute the replica count: %v", first.cause)
		return rec, err
	}
	r.condition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from %s", rec.metric)
	rec.usable = true
	return rec, err
}

// selector parses the target's selector; one that is missing, does not
// parse or selects pods another autoscaler selects too makes the
// autoscaler inactive.
func (r *run) selector(s string) (labels.Selector, error) {
	if s == "" {
		r.warn("SelectorRequired", "selector is required")
		r.condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		return nil, errors.New("selector is required")
	}
	sel, err := labels.Parse(s)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		r.warn("InvalidSelector", msg)
		r.condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "%s", msg)
		return nil, errors.New(msg)
	}
	pods, err := r.pods.Pods(r.hpa.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	if keys := r.histories.selecting(r.key, sel, pods); len(keys) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", s, keys)
		r.warn("AmbiguousSelector", msg)
		r.condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", "%s", msg)
		return nil, errors.New(msg)
	}
	return sel, nil
}

// metricReplicas is one metric's recommendation, the metric as a rescale
// reason names it, and its status, or why it has none.
func (r *run) metricReplicas(ctx context.Context, spec autoscalingv2.MetricSpec, current int32, sel labels.Selector) (int32, string, autoscalingv2.MetricStatus, *metricError) {
	var status autoscalingv2.MetricStatus
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		src := spec.Resource
		replicas, value, metric, err := r.resourceReplicas(ctx, src.Name, "", src.Target, current, sel)
		if err != nil {
			return 0, "", status, &metricError{"FailedGetResourceMetric", fmt.Sprintf("failed to get %s resource metric value", src.Name), err}
		}
		status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: src.Name, Current: value}}
		return replicas, metric, status, nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		src := spec.ContainerResource
		replicas, value, metric, err := r.resourceReplicas(ctx, src.Name, src.Container, src.Target, current, sel)
		if err != nil {
			return 0, "", status, &metricError{"FailedGetContainerResourceMetric", fmt.Sprintf("failed to get %s container metric value", src.Container), err}
		}
		status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: src.Name, Container: src.Container, Current: value}}
		return replicas, metric, status, nil
	case autoscalingv2.PodsMetricSourceType:
		return 0, "", status, &metricError{"FailedGetPodsMetric", "failed to get pods metric value",
			fmt.Errorf("unable to get metric %s: %w", spec.Pods.Metric.Name, errNoCustomMetrics)}
	case autoscalingv2.ObjectMetricSourceType:
		obj := spec.Object.DescribedObject
		return 0, "", status, &metricError{"FailedGetObjectMetric", "failed to get object metric value",
			fmt.Errorf("unable to get metric %s on %s %s/%s: %w", spec.Object.Metric.Name, obj.Kind, r.hpa.Namespace, obj.Name, errNoCustomMetrics)}
	case autoscalingv2.ExternalMetricSourceType:
		name := spec.External.Metric.Name
		return 0, "", status, &metricError{"FailedGetExternalMetric", fmt.Sprintf("failed to get %s external metric value", name),
			fmt.Errorf("unable to get external metric %s/%s/%+v: %w", r.hpa.Namespace, name, spec.External.Metric.Selector, errNoExternalMetrics)}
	}
	return 0, "", status, &metricError{reason: "InvalidMetricSourceType", cause: fmt.Errorf("unknown metric source type %q", spec.Type)}
}

// resourceReplicas is the recommendation for a cpu or memory target, the
// current value, and the metric's name in rescale reasons.
func (r *run) resourceReplicas(ctx context.Context, name corev1.ResourceName, container string, target autoscalingv2.MetricTarget,
	current int32, sel labels.Selector) (int32, autoscalingv2.MetricValueStatus, string, error) {
	var value autoscalingv2.MetricValueStatus
	what, metric := "usage", fmt.Sprintf("%s resource", name)
	switch {
	case target.AverageValue != nil:
	case target.AverageUtilization == nil:
		return 0, value, "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	case container == "":
		what, metric = "utilization", fmt.Sprintf("%s resource utilization (percentage of request)", name)
	default:
		what, metric = "utilization", fmt.Sprintf("%s container resource utilization (percentage of request)", name)
	}
	var replicas int32
	u, err := r.usage(ctx, name, container, current, sel)
	if err == nil {
		replicas, value, err = u.measure(target)
	}
	if err != nil {
		return 0, value, "", fmt.Errorf("failed to get %s %s: %w", name, what, err)
	}
	return replicas, value, metric, nil
}

// usage reads the samples of resource and the pods the selector selects.
func (r *run) usage(ctx context.Context, name corev1.ResourceName, container string, current int32, sel labels.Selector) (usage, error) {
	list, err := r.metrics.podMetrics(ctx, r.hpa.Namespace, sel)
	if err != nil {
		return usage{}, fmt.Errorf("unable to get metrics for resource %s: unable to fetch metrics from resource metrics API: %w", name, err)
	}
	if len(list) == 0 {
		return usage{}, fmt.Errorf("unable to get metrics for resource %s: no metrics returned from resource metrics API", name)
	}
	pods, err := r.pods.Pods(r.hpa.Namespace).List(sel)
	if err != nil {
		return usage{}, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	return usage{resource: name, container: container, pods: pods, samples: samplesOf(list, name, container),
		current: current, tolerances: r.tolerances(), now: r.now}, nil
}

// tolerances are the autoscaler's, by default 10% either way.
func (r *run) tolerances() tolerances {
	t := tolerances{defaultTolerance, defaultTolerance}
	if b := r.hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}
