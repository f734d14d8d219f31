package endpoints

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPlan(t *testing.T) {
	trigger := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := testService(svcPort("", 80, intstr.FromInt32(8080)))
	subsets := subsetsFor(svc, []*corev1.Pod{testPod("a", "10.244.1.2", true)})

	first, write := plan(svc, nil, subsets, trigger)
	if !write {
		t.Fatal("no Endpoints yet, but nothing to write")
	}
	if first.Name != "web" || first.Namespace != "ns" {
		t.Errorf("identity %s/%s", first.Namespace, first.Name)
	}
	wantLabels := map[string]string{"tier": "front", managedByLabel: managedBy}
	if fmt.Sprint(first.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels %v, want %v", first.Labels, wantLabels)
	}
	if got := first.Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-01-01T00:00:00Z" {
		t.Errorf("trigger time annotation %q", got)
	}

	stored := first.DeepCopy()
	stored.ResourceVersion = "7"
	if _, write := plan(svc, stored, subsetsFor(svc, []*corev1.Pod{testPod("a", "10.244.1.2", true)}), trigger.Add(time.Hour)); write {
		t.Error("an unchanged result is written again")
	}

	relabeled := svc.DeepCopy()
	relabeled.Labels["tier"] = "back"
	next, write := plan(relabeled, stored, subsets, trigger)
	if !write || next.Labels["tier"] != "back" || next.ResourceVersion != "7" {
		t.Errorf("service labels changed: write %v, labels %v, rv %q", write, next.Labels, next.ResourceVersion)
	}

	headless := svc.DeepCopy()
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	next, write = plan(headless, stored, subsets, trigger)
	if _, ok := next.Labels[corev1.IsHeadlessService]; !write || !ok {
		t.Errorf("headless service: write %v, labels %v", write, next.Labels)
	}

	next, write = plan(svc, stored, nil, time.Time{})
	if !write || len(next.Subsets) != 0 {
		t.Errorf("pods gone: write %v, subsets %v", write, next.Subsets)
	}
	if _, ok := next.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok {
		t.Error("a zero trigger time leaves the annotation")
	}
}

func TestPlanOverCapacity(t *testing.T) {
	svc := testService(svcPort("", 80, intstr.FromInt32(8080)))
	var pods []*corev1.Pod
	for i := range maxAddresses + 5 {
		pods = append(pods, testPod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), true))
	}
	ep, write := plan(svc, nil, subsetsFor(svc, pods), time.Time{})
	if !write || ep.Annotations[corev1.EndpointsOverCapacity] != truncated || len(ep.Subsets[0].Addresses) != maxAddresses {
		t.Fatalf("over capacity: write %v, annotations %v, %d addresses", write, ep.Annotations, len(ep.Subsets[0].Addresses))
	}
	if _, write := plan(svc, ep, subsetsFor(svc, pods), time.Time{}); write {
		t.Error("an unchanged truncated result is written again")
	}
	ep, _ = plan(svc, ep, subsetsFor(svc, pods[:10]), time.Time{})
	if _, ok := ep.Annotations[corev1.EndpointsOverCapacity]; ok {
		t.Error("the over-capacity annotation stays below capacity")
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name                    string
		ready, notReady         []int // addresses per subset
		wantReady, wantNotReady []int
		wantCut                 bool
	}{
		{name: "under capacity", ready: []int{100, 200}, notReady: []int{300, 400}, wantReady: []int{100, 200}, wantNotReady: []int{300, 400}},
		{name: "at capacity", ready: []int{500}, notReady: []int{500}, wantReady: []int{500}, wantNotReady: []int{500}},
		{name: "exactly full", ready: []int{300, 300}, notReady: []int{300, 100},
			wantReady: []int{300, 300}, wantNotReady: []int{300, 100}},
		{name: "not ready cut in proportion", ready: []int{400, 200}, notReady: []int{600, 200},
			wantReady: []int{400, 200}, wantNotReady: []int{300, 100}, wantCut: true},
		{name: "ready alone too many", ready: []int{900, 300}, notReady: []int{10, 10},
			wantReady: []int{750, 250}, wantNotReady: []int{0, 0}, wantCut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in []corev1.EndpointSubset
			for i := range tt.ready {
				in = append(in, corev1.EndpointSubset{
					Addresses:         make([]corev1.EndpointAddress, tt.ready[i]),
					NotReadyAddresses: make([]corev1.EndpointAddress, tt.notReady[i]),
				})
			}
			out, cut := truncate(in)
			if cut != tt.wantCut {
				t.Errorf("cut = %v, want %v", cut, tt.wantCut)
			}
			for i, ss := range out {
				if len(ss.Addresses) != tt.wantReady[i] || len(ss.NotReadyAddresses) != tt.wantNotReady[i] {
					t.Errorf("subset %d: %d ready, %d not ready; want %d, %d", i,
						len(ss.Addresses), len(ss.NotReadyAddresses), tt.wantReady[i], tt.wantNotReady[i])
				}
			}
			if len(in[0].NotReadyAddresses) != tt.notReady[0] {
				t.Error("input modified")
			}
		})
	}
}
