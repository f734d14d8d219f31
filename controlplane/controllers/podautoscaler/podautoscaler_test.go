package podautoscaler

import (
	"context"
	"errors"
	"slices"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// fakeScales serves one scale and records the replicas set.
type fakeScales struct {
	scale *autoscalingv1.Scale
	err   error
	set   []int32
}

func (f *fakeScales) scaleOf(context.Context, string, autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupVersionResource, error) {
	if f.err != nil {
		return nil, schema.GroupVersionResource{}, f.err
	}
	return f.scale.DeepCopy(), schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, nil
}

func (f *fakeScales) setReplicas(_ context.Context, _ schema.GroupVersionResource, _ *autoscalingv1.Scale, replicas int32) error {
	f.set = append(f.set, replicas)
	return nil
}

// fakeMetrics serves PodMetrics of the pods the selector selects.
type fakeMetrics []metricsv1beta1.PodMetrics

func (f fakeMetrics) podMetrics(_ context.Context, _ string, sel labels.Selector) ([]metricsv1beta1.PodMetrics, error) {
	var out []metricsv1beta1.PodMetrics
	for _, m := range f {
		if sel.Matches(labels.Set(m.Labels)) {
			out = append(out, m)
		}
	}
	return out, nil
}

func cpuMetrics(pods []*corev1.Pod, milli int64) fakeMetrics {
	var out fakeMetrics
	for _, p := range pods {
		out = append(out, metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
			Timestamp: metav1.NewTime(t0), Window: metav1.Duration{Duration: 10e9},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}}})
	}
	return out
}

func testHPA(mutate func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}}}}
	if mutate != nil {
		mutate(hpa)
	}
	return hpa
}

type condition struct {
	typ    autoscalingv2.HorizontalPodAutoscalerConditionType
	status corev1.ConditionStatus
	reason string
}

// TestSync syncs one autoscaler of a Deployment with two pods, on a fake
// clientset whose informer caches are filled by hand.
func TestSync(t *testing.T) {
	twoPods := pods(2)
	tests := []struct {
		name       string
		hpa        *autoscalingv2.HorizontalPodAutoscaler
		replicas   int32
		scaleErr   error
		metrics    fakeMetrics
		wantSet    []int32
		wantEvents []string
		wantConds  []condition
		wantErr    bool
	}{
		{name: "cpu above target scales up", hpa: testHPA(nil), replicas: 2, metrics: cpuMetrics(twoPods, 900), wantSet: []int32{4},
			wantEvents: []string{"Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target"},
			wantConds: []condition{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"},
				{autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound"},
				{autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange"},
				{autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero"}}},
		{name: "cpu within tolerance changes nothing", hpa: testHPA(nil), replicas: 2, metrics: cpuMetrics(twoPods, 520),
			wantConds: []condition{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"},
				{autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound"},
				{autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange"}}},
		{name: "a pods metric has no API", replicas: 2, metrics: cpuMetrics(twoPods, 900), wantErr: true,
			hpa: testHPA(func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}}}
			}),
			wantEvents: []string{"Warning FailedGetPodsMetric unable to get metric qps: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
				"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get pods metric value: unable to get metric qps: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"},
			wantConds: []condition{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"},
				{autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetPodsMetric"}}},
		{name: "a target at zero is not scaled", hpa: testHPA(nil), replicas: 0, metrics: cpuMetrics(twoPods, 900),
			wantConds: []condition{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"},
				{autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled"}}},
		{name: "below min replicas", hpa: testHPA(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](3) }),
			replicas: 2, metrics: cpuMetrics(twoPods, 900), wantSet: []int32{3},
			wantEvents: []string{"Normal SuccessfulRescale New size: 3; reason: Current number of replicas below Spec.MinReplicas"},
			wantConds: []condition{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"},
				{autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero"}}},
		{name: "no scale", hpa: testHPA(nil), scaleErr: errors.New(`deployments.apps "web" not found`), wantErr: true,
			wantEvents: []string{`Warning FailedGetScale deployments.apps "web" not found`},
			wantConds:  []condition{{autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.hpa)
			factory := informers.NewSharedInformerFactory(client, 0)
			recorder := record.NewFakeRecorder(10)
			cc := component.Context{Client: client, Informers: factory, Recorder: func(string) record.EventRecorder { return recorder }}
			scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
				Spec: autoscalingv1.ScaleSpec{Replicas: tt.replicas}, Status: autoscalingv1.ScaleStatus{Replicas: tt.replicas, Selector: "app=web"}}
			scales := &fakeScales{scale: scale, err: tt.scaleErr}
			c, err := newController(cc, scales, tt.metrics, clocktesting.NewFakeClock(t0))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.queue.ShutDown)
			add(t, factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Add, tt.hpa)
			for _, p := range twoPods {
				add(t, factory.Core().V1().Pods().Informer().GetIndexer().Add, p)
			}

			err = c.sync(t.Context(), "ns/web")
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync: %v, want an error: %v", err, tt.wantErr)
			}
			if !slices.Equal(scales.set, tt.wantSet) {
				t.Errorf("replicas set %v, want %v", scales.set, tt.wantSet)
			}
			if got := drain(recorder.Events); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events\n%q\nwant\n%q", got, tt.wantEvents)
			}
			got, err := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Get(t.Context(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var conds []condition
			for _, c := range got.Status.Conditions {
				conds = append(conds, condition{c.Type, c.Status, c.Reason})
			}
			if !slices.Equal(conds, tt.wantConds) {
				t.Errorf("conditions %v, want %v", conds, tt.wantConds)
			}
		})
	}
}

// TestSyncStatus checks the status a scale up writes.
func TestSyncStatus(t *testing.T) {
	hpa := testHPA(nil)
	client := fake.NewClientset(hpa)
	factory := informers.NewSharedInformerFactory(client, 0)
	cc := component.Context{Client: client, Informers: factory, Recorder: func(string) record.EventRecorder { return record.NewFakeRecorder(10) }}
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: autoscalingv1.ScaleSpec{Replicas: 2}, Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"}}
	twoPods := pods(2)
	c, err := newController(cc, &fakeScales{scale: scale}, cpuMetrics(twoPods, 900), clocktesting.NewFakeClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	add(t, factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Add, hpa)
	for _, p := range twoPods {
		add(t, factory.Core().V1().Pods().Informer().GetIndexer().Add, p)
	}
	if err := c.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	got, err := client.AutoscalingV2().HorizontalPodAutoscalers("ns").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 4 || st.LastScaleTime == nil || !st.LastScaleTime.Time.Equal(t0) ||
		ptr.Deref(st.ObservedGeneration, 0) != 1 || len(st.CurrentMetrics) != 1 {
		t.Fatalf("status = %+v", st)
	}
	cur := st.CurrentMetrics[0].Resource
	if cur == nil || cur.Name != corev1.ResourceCPU || ptr.Deref(cur.Current.AverageUtilization, 0) != 90 || cur.Current.AverageValue.String() != "900m" {
		t.Errorf("current metric = %+v", st.CurrentMetrics[0])
	}
	if msg := st.Conditions[1].Message; msg != "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)" {
		t.Errorf("ScalingActive message %q", msg)
	}

	// Deleted, the autoscaler's history is forgotten.
	add(t, factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Delete, hpa)
	if err := c.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if len(c.histories.byKey) != 0 || len(c.histories.selectors) != 0 {
		t.Errorf("histories kept after delete: %v", c.histories.byKey)
	}
}

func TestAmbiguousSelector(t *testing.T) {
	h := &histories{byKey: map[string]*history{}, selectors: map[string]labels.Selector{}}
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	p := pods(1)
	if got := h.selecting("ns/a", web, p); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("one autoscaler: %v", got)
	}
	if got := h.selecting("other/b", web, p); !slices.Equal(got, []string{"other/b"}) {
		t.Errorf("another namespace: %v", got)
	}
	if got := h.selecting("ns/b", web, p); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Errorf("two autoscalers: %v", got)
	}
}

func add[T any](t *testing.T, f func(obj any) error, obj T) {
	t.Helper()
	if err := f(obj); err != nil {
		t.Fatal(err)
	}
}

func drain(events chan string) []string {
	var out []string
	for {
		select {
		case e := <-events:
			out = append(out, e)
		default:
			return out
		}
	}
}
