package podautoscaler

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// testPod is a running pod, ready since an hour, whose one container
// "app" requests 1 cpu and 256Mi.
func testPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Hour)}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pending(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }

// notReady: the pod started a minute ago and is not ready yet.
func notReady(p *corev1.Pod) {
	p.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Minute)}
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-time.Minute))
}

// justReady: the pod started a minute ago and became ready 5 s ago, less
// than a sample window.
func justReady(p *corev1.Pod) {
	p.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Minute)}
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-5 * time.Second))
}

func noCPURequest(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceCPU) }

func pods(n int, opts ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, testPod(string(rune('a'+i)), opts...))
	}
	return out
}

func samples(values map[string]int64) map[string]sample {
	out := map[string]sample{}
	for pod, v := range values {
		out[pod] = sample{value: v, at: t0, window: 10 * time.Second}
	}
	return out
}

func TestUtilization(t *testing.T) {
	tests := []struct {
		name            string
		pods            []*corev1.Pod
		samples         map[string]int64 // milli-cpu by pod
		current         int32
		want            int32
		wantUtilization int32
		wantErr         string
	}{
		{name: "scale up", pods: pods(3), samples: map[string]int64{"a": 900, "b": 900, "c": 900}, current: 3, want: 6, wantUtilization: 90},
		{name: "scale down", pods: pods(4), samples: map[string]int64{"a": 200, "b": 200, "c": 200, "d": 200}, current: 4, want: 2, wantUtilization: 20},
		{name: "within tolerance", pods: pods(3), samples: map[string]int64{"a": 520, "b": 540, "c": 500}, current: 3, want: 3, wantUtilization: 52},
		// The missing pod counts at its request: (300+1000)/4000 = 32%.
		{name: "missing metrics on scale down count at 100%", pods: pods(4), samples: map[string]int64{"a": 100, "b": 100, "c": 100},
			current: 4, want: 3, wantUtilization: 10},
		// The missing pod counts as idle: 2000/3000 = 66%, 1.32 × 3.
		{name: "missing metrics on scale up count at 0%", pods: pods(3), samples: map[string]int64{"a": 1000, "b": 1000},
			current: 3, want: 4, wantUtilization: 100},
		// The ready pod alone would make 2 of 4; with the unready ones
		// idle usage is below target: no scale down from a hot pod.
		{name: "unready pods count as idle and the direction is checked again",
			pods:    append(pods(1), testPod("b", pending), testPod("c", notReady), testPod("d", justReady)),
			samples: map[string]int64{"a": 600, "c": 900, "d": 900}, current: 4, want: 4, wantUtilization: 60},
		{name: "unready pods on scale up", pods: append(pods(2), testPod("c", notReady)),
			samples: map[string]int64{"a": 1000, "b": 1000, "c": 0}, current: 3, want: 4, wantUtilization: 100},
		{name: "failed and deleted pods do not count", pods: append(pods(2), testPod("c", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			testPod("d", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} })),
			samples: map[string]int64{"a": 250, "b": 250, "c": 1000, "d": 1000}, current: 4, want: 1, wantUtilization: 25},
		{name: "missing request", pods: append(pods(1), testPod("b", noCPURequest)), samples: map[string]int64{"a": 100, "b": 100},
			wantErr: "missing request for cpu in container app of Pod b"},
		{name: "no pods", samples: map[string]int64{"a": 100}, wantErr: "no pods returned by selector while calculating replica count"},
		{name: "no samples of ready pods", pods: []*corev1.Pod{testPod("a", notReady)}, samples: map[string]int64{"a": 100},
			wantErr: "did not receive metrics for targeted pods (pods might be unready)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := usage{resource: corev1.ResourceCPU, pods: tt.pods, samples: samples(tt.samples), current: tt.current,
				tolerances: tolerances{defaultTolerance, defaultTolerance}, now: t0}
			got, utilization, _, err := u.utilization(50)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || utilization != tt.wantUtilization {
				t.Errorf("utilization(50%%) = %d replicas at %d%% (%v), want %d at %d%%", got, utilization, err, tt.want, tt.wantUtilization)
			}
		})
	}
}

func TestAverageValue(t *testing.T) {
	mi := int64(1<<20) * 1000 // a mebibyte in milli-bytes
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		samples map[string]int64
		current int32
		want    int32
		wantAvg int64
	}{
		{name: "memory above target", pods: pods(2), samples: map[string]int64{"a": 150 * mi, "b": 250 * mi}, current: 2, want: 4, wantAvg: 200 * mi},
		{name: "memory below target", pods: pods(4), samples: map[string]int64{"a": 20 * mi, "b": 20 * mi, "c": 20 * mi, "d": 20 * mi},
			current: 4, want: 1, wantAvg: 20 * mi},
		// The missing pod counts at target: (3×20+100)/4 = 40Mi.
		{name: "missing metrics on scale down count at target", pods: pods(4), samples: map[string]int64{"a": 20 * mi, "b": 20 * mi, "c": 20 * mi},
			current: 4, want: 2, wantAvg: 20 * mi},
		{name: "within tolerance", pods: pods(2), samples: map[string]int64{"a": 95 * mi, "b": 105 * mi}, current: 2, want: 2, wantAvg: 100 * mi},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := usage{resource: corev1.ResourceMemory, pods: tt.pods, samples: samples(tt.samples), current: tt.current,
				tolerances: tolerances{defaultTolerance, defaultTolerance}, now: t0}
			got, avg, err := u.averageValue(100 * mi)
			if err != nil || got != tt.want || avg != tt.wantAvg {
				t.Errorf("averageValue(100Mi) = %d replicas at %d (%v), want %d at %d", got, avg, err, tt.want, tt.wantAvg)
			}
		})
	}
}

func TestSamplesOf(t *testing.T) {
	usage := func(cpu string) corev1.ResourceList {
		if cpu == "" {
			return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
		}
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	list := []metricsv1beta1.PodMetrics{
		{ObjectMeta: metav1.ObjectMeta{Name: "two"}, Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: usage("100m")}, {Name: "proxy", Usage: usage("20m")}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "partial"}, Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: usage("100m")}, {Name: "proxy", Usage: usage("")}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty"}},
	}
	values := func(s map[string]sample) map[string]int64 {
		out := map[string]int64{}
		for pod, v := range s {
			out[pod] = v.value
		}
		return out
	}
	if got, want := values(samplesOf(list, corev1.ResourceCPU, "")), map[string]int64{"two": 120}; !maps.Equal(got, want) {
		t.Errorf("pod samples = %v, want %v", got, want)
	}
	if got, want := values(samplesOf(list, corev1.ResourceCPU, "app")), map[string]int64{"two": 100, "partial": 100}; !maps.Equal(got, want) {
		t.Errorf("container app samples = %v, want %v", got, want)
	}
}
