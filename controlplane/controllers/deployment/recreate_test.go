package deployment

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestScaleToZero(t *testing.T) {
	rss := []*appsv1.ReplicaSet{testRS("a", 3, 30), testRS("b", 0, 20, pods(1)), testRS("c", 1, 10)}
	if got, want := describe(scaleToZero(rss)), []string{"a=0", "c=0"}; !slices.Equal(got, want) {
		t.Errorf("plan %v, want %v", got, want)
	}
}

func TestOldPodsRunning(t *testing.T) {
	current := testRS("new", 3, 0)
	drained := testRS("old", 0, 10, pods(0))
	pod := func(phase corev1.PodPhase) *corev1.Pod { return &corev1.Pod{Status: corev1.PodStatus{Phase: phase}} }
	tests := []struct {
		name   string
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		pods   map[types.UID][]*corev1.Pod
		want   bool
	}{
		{"old ReplicaSet still reports pods", current, []*appsv1.ReplicaSet{testRS("old", 0, 10, pods(2))}, nil, true},
		{"an old pod still runs", current, []*appsv1.ReplicaSet{drained},
			map[types.UID][]*corev1.Pod{drained.UID: {pod(corev1.PodRunning)}}, true},
		{"an old pod still pending", nil, []*appsv1.ReplicaSet{drained},
			map[types.UID][]*corev1.Pod{drained.UID: {pod(corev1.PodPending)}}, true},
		{"an old pod in unknown phase", nil, []*appsv1.ReplicaSet{drained},
			map[types.UID][]*corev1.Pod{drained.UID: {pod(corev1.PodUnknown)}}, true},
		{"old pods finished", current, []*appsv1.ReplicaSet{drained},
			map[types.UID][]*corev1.Pod{drained.UID: {pod(corev1.PodSucceeded), pod(corev1.PodFailed)}}, false},
		{"only new pods", current, []*appsv1.ReplicaSet{drained},
			map[types.UID][]*corev1.Pod{current.UID: {pod(corev1.PodRunning)}, drained.UID: nil}, false},
		{"nothing", nil, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oldPodsRunning(tt.newRS, tt.oldRSs, tt.pods); got != tt.want {
				t.Errorf("oldPodsRunning = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRecreateOrder plays a Recreate rollout step by step: the new
// ReplicaSet appears only once no old pod is left.
func TestRecreateOrder(t *testing.T) {
	d := newDeployment(3, "", "", recreate)
	old := testRS("old", 3, 10, available(3))
	var steps []string
	for range 3 {
		oldRSs := []*appsv1.ReplicaSet{old}
		if plan := scaleToZero(oldRSs); len(plan) > 0 {
			steps = append(steps, describe(plan)...)
			old.Spec.Replicas = new(int32(0)) // the pods are still there
			continue
		}
		if oldPodsRunning(nil, oldRSs, nil) {
			steps = append(steps, "wait")
			old.Status.Replicas = 0 // now they are gone
			continue
		}
		steps = append(steps, fmt.Sprint("create new with ", newReplicaSetSize(d, oldRSs, testRS("new", 0, 0))))
	}
	if want := []string{"old=0", "wait", "create new with 3"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
}
