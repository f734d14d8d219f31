package registry

import (
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func newAutoscaler(mutate func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 5}}
	hpa.Name, hpa.Namespace = "web", "default"
	if mutate != nil {
		mutate(hpa)
	}
	autoscalerStrategy{}.PrepareForCreate(hpa)
	return hpa
}

func TestAutoscalerDefaultsAndValidate(t *testing.T) {
	hpa := newAutoscaler(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}
	})
	if *hpa.Spec.MinReplicas != 1 || len(hpa.Spec.Metrics) != 1 || *cpuUtilizationOf(&hpa.Spec.Metrics[0]) != 80 {
		t.Errorf("defaults: %+v", hpa.Spec)
	}
	if b := hpa.Spec.Behavior; !apiequality.Semantic.DeepEqual(b.ScaleUp, ScaleUpRules()) || *b.ScaleDown.StabilizationWindowSeconds != 60 || len(b.ScaleDown.Policies) != 1 {
		t.Errorf("behavior defaults: %+v", b)
	}
	apitest.CheckErrorFields(t, autoscalerStrategy{}.Validate(hpa))
	bad := newAutoscaler(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Spec.MinReplicas, h.Spec.MaxReplicas = ptr.To[int32](3), 2
		h.Spec.ScaleTargetRef.Name = ""
		h.Spec.Metrics = []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.PodsMetricSourceType},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}},
		}
	})
	apitest.CheckErrorFields(t, autoscalerStrategy{}.Validate(bad), "spec.maxReplicas: Invalid value", "spec.scaleTargetRef.name: Required value",
		"spec.metrics[0].pods: Required value", "spec.metrics[1].resource.target.averageUtilization: Required value")
}

// TestAutoscalerConversion: what autoscaling/v2 holds survives a trip
// through autoscaling/v1 (the CPU target in its field, the rest in
// annotations), and v1's implicit CPU target becomes explicit.
func TestAutoscalerConversion(t *testing.T) {
	q := resource.MustParse("100")
	hpa := newAutoscaler(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Annotations = map[string]string{"team": "a"}
		h.Spec.Metrics = []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}},
			cpuUtilization(50),
		}
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}
	})
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](70), AverageValue: &q}}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"}}}

	var v1 autoscalingv1.HorizontalPodAutoscaler
	if err := autoscalerToV1(hpa, &v1); err != nil {
		t.Fatal(err)
	}
	if *v1.Spec.TargetCPUUtilizationPercentage != 50 || *v1.Status.CurrentCPUUtilizationPercentage != 70 {
		t.Errorf("v1 = %+v", v1)
	}
	for _, k := range roundTripAnnotations {
		if v1.Annotations[k] == "" {
			t.Errorf("v1 lacks annotation %s: %v", k, v1.Annotations)
		}
	}
	var back autoscalingv2.HorizontalPodAutoscaler
	autoscalerToV2(&v1, &back)
	if !apiequality.Semantic.DeepEqual(back.Spec, hpa.Spec) || !apiequality.Semantic.DeepEqual(back.Status, hpa.Status) ||
		!apiequality.Semantic.DeepEqual(back.Annotations, hpa.Annotations) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, hpa)
	}

	var implicit autoscalingv2.HorizontalPodAutoscaler
	autoscalerToV2(&autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}}, &implicit)
	if len(implicit.Spec.Metrics) != 1 || *cpuUtilizationOf(&implicit.Spec.Metrics[0]) != 80 {
		t.Errorf("v1 without a target: %+v", implicit.Spec.Metrics)
	}
}

func TestAutoscalerRow(t *testing.T) {
	hpa := newAutoscaler(nil)
	if got := (autoscalerStrategy{}).Row(hpa)[2]; got != "cpu: <unknown>/80%" {
		t.Errorf("targets = %v", got)
	}
	hpa.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](12)}}}}
	if got := (autoscalerStrategy{}).Row(hpa)[2]; got != "cpu: 12%/80%" {
		t.Errorf("targets = %v", got)
	}
}

func TestDisruptionBudgetValidate(t *testing.T) {
	pct := intstr.FromString("120%")
	pdb := &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: &pct,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}
	apitest.CheckErrorFields(t, disruptionBudgetStrategy{}.Validate(pdb), "spec: Invalid value", "spec.maxUnavailable: Invalid value")
	pdb.Spec.MaxUnavailable = nil
	apitest.CheckErrorFields(t, disruptionBudgetStrategy{}.Validate(pdb))
	pdb.Status.DisruptionsAllowed = -1
	apitest.CheckErrorFields(t, disruptionBudgetStrategy{}.ValidateSubresourceUpdate("status", pdb, pdb), "status.disruptionsAllowed: Invalid value")
	if row := (disruptionBudgetStrategy{}).Row(pdb); row[1] != "1" || row[2] != "N/A" {
		t.Errorf("row = %v", row)
	}
}
