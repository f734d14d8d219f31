package podautoscaler

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelpers "k8s.io/component-helpers/resource"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// How kube-controller-manager's flags default: a recommendation within
// 10% of the current usage changes nothing; a pod's CPU sample counts
// only once the pod is ready and has been so for a whole sample window,
// within five minutes of its start, and a pod that has never been ready
// 30 s after its start does not count.
const (
	defaultTolerance        = 0.1
	cpuInitializationPeriod = 5 * time.Minute
	initialReadinessDelay   = 30 * time.Second
)

// tolerances are how far below (down) and above (up) 1 a usage ratio may
// be without a change of scale.
type tolerances struct{ down, up float64 }

func (t tolerances) within(ratio float64) bool { return 1-t.down <= ratio && ratio <= 1+t.up }

// sample is a pod's usage of a resource in milli-units, as the metrics
// API measured it over window up to at.
type sample struct {
	value  int64
	at     time.Time
	window time.Duration
}

// samplesOf is each pod's usage of resource: the sum over its containers,
// or the usage of container alone when it is named. A pod that lacks a
// value (no containers, a container without the resource, no such
// container) has no sample.
func samplesOf(list []metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) map[string]sample {
	samples := make(map[string]sample, len(list))
	for _, m := range list {
		total, found := int64(0), 0
		for _, c := range m.Containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Usage[resource]
			if !ok {
				found = -1
				break
			}
			total += q.MilliValue()
			found++
		}
		if found > 0 {
			samples[m.Name] = sample{value: total, at: m.Timestamp.Time, window: m.Window.Duration}
		}
	}
	return samples
}

// usage is what one resource metric's recommendation is computed from:
// the target's pods and their samples (by pod name) at now, with current
// replicas.
type usage struct {
	resource   corev1.ResourceName
	container  string // "" for whole pods
	pods       []*corev1.Pod
	samples    map[string]sample
	current    int32
	tolerances tolerances
	now        time.Time
}

// podGroups sorts the pods for a recommendation: ready pods count with
// their samples; unready pods count as idle on a scale up; pods missing a
// sample count as idle on a scale up and at target on a scale down.
type podGroups struct {
	ready            int
	unready, missing []string
}

// group sorts u's pods and returns the samples that count: those of the
// ready pods (and any of pods the cache does not know yet). Deleted and
// failed pods do not count at all.
func (u usage) group() (podGroups, map[string]int64) {
	var g podGroups
	values := make(map[string]int64, len(u.samples))
	for name, s := range u.samples {
		values[name] = s.value
	}
	for _, pod := range u.pods {
		s, found := u.samples[pod.Name]
		switch {
		case pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed:
			delete(values, pod.Name)
		case pod.Status.Phase == corev1.PodPending:
			g.unready = append(g.unready, pod.Name)
			delete(values, pod.Name)
		case !found:
			g.missing = append(g.missing, pod.Name)
		case u.resource == corev1.ResourceCPU && cpuUnready(pod, s, u.now):
			g.unready = append(g.unready, pod.Name)
			delete(values, pod.Name)
		default:
			g.ready++
		}
	}
	return g, values
}

// counted is group, failing when there are no pods or no samples count.
func (u usage) counted() (podGroups, map[string]int64, error) {
	if len(u.pods) == 0 {
		return podGroups{}, nil, errors.New("no pods returned by selector while calculating replica count")
	}
	g, values := u.group()
	if len(values) == 0 {
		return podGroups{}, nil, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	return g, values, nil
}

// cpuUnready tells whether a running pod's CPU sample is left out: during
// its initialization period unless it is ready and was so for the whole
// sample window, afterwards if it is unready and never was ready.
func cpuUnready(pod *corev1.Pod, s sample, now time.Time) bool {
	var ready *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			ready = &pod.Status.Conditions[i]
		}
	}
	if ready == nil || pod.Status.StartTime == nil {
		return true
	}
	start, changed := pod.Status.StartTime.Time, ready.LastTransitionTime.Time
	if start.Add(cpuInitializationPeriod).After(now) {
		return ready.Status == corev1.ConditionFalse || s.at.Before(changed.Add(s.window))
	}
	return ready.Status == corev1.ConditionFalse && start.Add(initialReadinessDelay).After(changed)
}

// utilization recommends replicas for a target utilization in percent of
// the pods' requests, and returns the current utilization and the
// average usage of the ready pods.
func (u usage) utilization(target int32) (replicas, utilization int32, average int64, err error) {
	g, values, err := u.counted()
	if err != nil {
		return 0, 0, 0, err
	}
	requests, err := podRequests(u.pods, u.resource, u.container)
	if err != nil {
		return 0, 0, 0, err
	}
	if utilization, average, err = utilizationOf(values, requests); err != nil {
		return 0, 0, 0, err
	}
	ratio := func(v map[string]int64) (float64, error) {
		util, _, err := utilizationOf(v, requests)
		return float64(util) / float64(target), err
	}
	fallback := max(100, int64(target))
	replicas, err = u.recommend(g, values, ratio, func(pod string) int64 { return requests[pod] * fallback / 100 })
	return replicas, utilization, average, err
}

// averageValue recommends replicas for a target average usage in
// milli-units, and returns the average usage of the ready pods.
func (u usage) averageValue(target int64) (replicas int32, average int64, err error) {
	g, values, err := u.counted()
	if err != nil {
		return 0, 0, err
	}
	ratio := func(v map[string]int64) (float64, error) { return float64(mean(v)) / float64(target), nil }
	replicas, err = u.recommend(g, values, ratio, func(string) int64 { return target })
	return replicas, mean(values), err
}

// recommend is the replica count that brings the ratio of usage to
// target to 1. It computes the ratio from the ready pods' values; when
// pods were missing or unready it computes it again with them assumed
// idle (scale up) or missing pods assumed at target (scale down), and
// keeps the current count when that second look is within tolerance or
// points the other way.
func (u usage) recommend(g podGroups, values map[string]int64, ratio func(map[string]int64) (float64, error), atTarget func(pod string) int64) (int32, error) {
	r, err := ratio(values)
	if err != nil {
		return 0, err
	}
	upWithUnready := len(g.unready) > 0 && r > 1
	if !upWithUnready && len(g.missing) == 0 {
		if u.tolerances.within(r) {
			return u.current, nil
		}
		return int32(math.Ceil(r * float64(g.ready))), nil
	}
	filled := maps.Clone(values)
	for _, pod := range g.missing {
		switch {
		case r < 1:
			filled[pod] = atTarget(pod)
		case r > 1:
			filled[pod] = 0
		}
	}
	if upWithUnready {
		for _, pod := range g.unready {
			filled[pod] = 0
		}
	}
	again, err := ratio(filled)
	if err != nil {
		return 0, err
	}
	if u.tolerances.within(again) || (r < 1 && again > 1) || (r > 1 && again < 1) {
		return u.current, nil
	}
	n := int32(math.Ceil(again * float64(len(filled))))
	if (again < 1 && n > u.current) || (again > 1 && n < u.current) {
		return u.current, nil
	}
	return n, nil
}

// measure recommends replicas for target, an average value or else an
// average utilization, and returns the current value.
func (u usage) measure(target autoscalingv2.MetricTarget) (int32, autoscalingv2.MetricValueStatus, error) {
	if target.AverageValue != nil {
		replicas, average, err := u.averageValue(target.AverageValue.MilliValue())
		return replicas, autoscalingv2.MetricValueStatus{AverageValue: quantity(u.resource, average)}, err
	}
	replicas, utilization, average, err := u.utilization(*target.AverageUtilization)
	return replicas, autoscalingv2.MetricValueStatus{AverageUtilization: &utilization, AverageValue: quantity(u.resource, average)}, err
}

// quantity is a milli-value as the metrics API shows it: memory in
// binary units, the rest in decimal.
func quantity(name corev1.ResourceName, milli int64) *resource.Quantity {
	format := resource.DecimalSI
	if name == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	return resource.NewMilliQuantity(milli, format)
}

// utilizationOf is the pods' usage in percent of their requests, over the
// pods that have both, and their average usage.
func utilizationOf(values, requests map[string]int64) (utilization int32, average int64, err error) {
	var total, requested, n int64
	for pod, v := range values {
		if req, ok := requests[pod]; ok {
			total, requested, n = total+v, requested+req, n+1
		}
	}
	if requested == 0 {
		return 0, 0, errors.New("no metrics returned matched known pods")
	}
	return int32(total * 100 / requested), total / n, nil
}

func mean(values map[string]int64) int64 {
	var total int64
	for _, v := range values {
		total += v
	}
	return total / int64(len(values))
}

// podRequests is each pod's request of resource in milli-units: the
// pod-level request when the pod sets one and no container is named,
// else the sum over its containers (sidecars included), or the named
// container's. A container without a request is an error.
func podRequests(pods []*corev1.Pod, resource corev1.ResourceName, container string) (map[string]int64, error) {
	requests := make(map[string]int64, len(pods))
	for _, pod := range pods {
		if container == "" && resourcehelpers.IsPodLevelRequestsSet(pod) {
			q, ok := resourcehelpers.PodRequests(pod, resourcehelpers.PodResourcesOptions{})[resource]
			if !ok {
				return nil, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, pod.Name)
			}
			requests[pod.Name] = q.MilliValue()
			continue
		}
		req, err := containerRequests(pod, resource, container)
		if err != nil {
			return nil, err
		}
		requests[pod.Name] = req
	}
	return requests, nil
}

func containerRequests(pod *corev1.Pod, resource corev1.ResourceName, container string) (int64, error) {
	containers := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	var total int64
	for _, c := range containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[resource]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.Name)
		}
		if container != "" {
			return q.MilliValue(), nil
		}
		total += q.MilliValue()
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
	}
	return total, nil
}
