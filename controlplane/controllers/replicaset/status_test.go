package replicaset

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCalculateStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	failure := appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: reasonFailedCreate, Message: "quota", LastTransitionTime: metav1.NewTime(t0),
	}
	tests := []struct {
		name        string
		replicas    int32
		minReady    int32
		conditions  []appsv1.ReplicaSetCondition
		active      []*corev1.Pod
		terminating int
		err         error
		want        appsv1.ReplicaSetStatus
	}{
		{
			name: "no pods", replicas: 3,
			want: appsv1.ReplicaSetStatus{ObservedGeneration: 1},
		},
		{
			name: "counts", replicas: 3, terminating: 2,
			active: []*corev1.Pod{
				newPod("pending"),
				newPod("ready", readyAt(now)),
				newPod("partly-labelled", labelled(testLabels), readyAt(now.Add(-time.Minute))),
			},
			want: appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1},
		},
		{
			name: "available after minReadySeconds", replicas: 4, minReady: 10,
			active: []*corev1.Pod{
				newPod("ready-long", readyAt(now.Add(-time.Minute))),
				newPod("ready-exactly", readyAt(now.Add(-10*time.Second))),
				newPod("ready-short", readyAt(now.Add(-9*time.Second))),
				newPod("ready-unknown-since", readyAt(time.Time{})),
			},
			want: appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 4, ReadyReplicas: 4, AvailableReplicas: 2, ObservedGeneration: 1},
		},
		{
			name: "create failure", replicas: 2, active: []*corev1.Pod{newPod("a")}, err: errors.New("quota exceeded"),
			want: appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, Conditions: []appsv1.ReplicaSetCondition{{
				Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
				Reason: reasonFailedCreate, Message: "quota exceeded", LastTransitionTime: metav1.NewTime(now),
			}}},
		},
		{
			name: "delete failure", replicas: 0, active: []*corev1.Pod{newPod("a")}, err: errors.New("forbidden"),
			want: appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, Conditions: []appsv1.ReplicaSetCondition{{
				Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
				Reason: reasonFailedDelete, Message: "forbidden", LastTransitionTime: metav1.NewTime(now),
			}}},
		},
		{
			name: "failure kept while failing", replicas: 1, conditions: []appsv1.ReplicaSetCondition{failure}, err: errors.New("still"),
			want: appsv1.ReplicaSetStatus{ObservedGeneration: 1, Conditions: []appsv1.ReplicaSetCondition{failure}},
		},
		{
			name: "failure cleared", replicas: 1, conditions: []appsv1.ReplicaSetCondition{failure},
			want: appsv1.ReplicaSetStatus{ObservedGeneration: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS(tt.replicas)
			rs.Spec.MinReadySeconds = tt.minReady
			rs.Status.Conditions = tt.conditions
			terminating := make([]*corev1.Pod, tt.terminating)
			tt.want.TerminatingReplicas = new(int32(tt.terminating))
			got := calculateStatus(rs, tt.active, terminating, tt.err, now)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("status =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestNextAvailable(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name     string
		minReady int32
		pods     []*corev1.Pod
		want     time.Duration
		wantOK   bool
	}{
		{name: "no minReadySeconds", pods: []*corev1.Pod{newPod("a", readyAt(now))}},
		{name: "not ready", minReady: 5, pods: []*corev1.Pod{newPod("a")}},
		{name: "already available", minReady: 5, pods: []*corev1.Pod{newPod("a", readyAt(now.Add(-5*time.Second)))}},
		{name: "ready since unknown", minReady: 5, pods: []*corev1.Pod{newPod("a", readyAt(time.Time{}))}},
		{
			name: "soonest", minReady: 10, wantOK: true, want: 3 * time.Second,
			pods: []*corev1.Pod{
				newPod("a", readyAt(now.Add(-2*time.Second))),
				newPod("b", readyAt(now.Add(-7*time.Second))),
				newPod("c", readyAt(now.Add(-time.Minute))),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := nextAvailable(tt.pods, tt.minReady, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("nextAvailable = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
