package deployment

import (
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// progressing sets d's status counts and Progressing condition, last
// updated ago before t0.
func progressing(reason string, status corev1.ConditionStatus, ago time.Duration, replicas, updated, available int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Status.Replicas, d.Status.UpdatedReplicas = replicas, updated
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = available, available
		d.Status.ObservedGeneration = d.Generation
		c := newCondition(appsv1.DeploymentProgressing, status, reason, "before", t0.Add(-ago))
		c.LastTransitionTime = metav1.NewTime(t0.Add(-time.Hour))
		d.Status.Conditions = []appsv1.DeploymentCondition{c}
	}
}

func TestCalculateStatus(t *testing.T) {
	d := newDeployment(4, "", "", func(d *appsv1.Deployment) {
		d.Generation = 3
		d.Status.CollisionCount = new(int32(2))
	})
	cur := testRS("new", 2, 0, available(1), pods(2))
	cur.Status.ReadyReplicas = 2
	cur.Status.TerminatingReplicas = new(int32(1))
	old := testRS("old", 3, 10, available(3), pods(3))
	old.Status.TerminatingReplicas = new(int32(0))

	st := calculateStatus(d, []*appsv1.ReplicaSet{old, cur}, cur, t0)
	want := appsv1.DeploymentStatus{
		ObservedGeneration: 3, Replicas: 5, UpdatedReplicas: 2, ReadyReplicas: 5, AvailableReplicas: 4,
		UnavailableReplicas: 1, TerminatingReplicas: new(int32(1)), CollisionCount: new(int32(2)),
	}
	st.Conditions = nil
	if !equalStatus(st, want) {
		t.Errorf("status %+v\nwant   %+v", st, want)
	}

	tests := []struct {
		name        string
		d           *appsv1.Deployment
		rss         []*appsv1.ReplicaSet
		wantStatus  corev1.ConditionStatus
		wantReason  string
		terminating *int32
	}{
		{"3 of 4 available, maxUnavailable 1", newDeployment(4, "", ""), []*appsv1.ReplicaSet{testRS("a", 4, 0, available(3))},
			corev1.ConditionTrue, reasonMinAvailable, new(int32(0))},
		{"2 of 4 available", newDeployment(4, "", ""), []*appsv1.ReplicaSet{testRS("a", 4, 0, available(2))},
			corev1.ConditionFalse, reasonMinUnavailable, new(int32(0))},
		{"recreate needs all", newDeployment(4, "", "", recreate), []*appsv1.ReplicaSet{testRS("a", 4, 0, available(3))},
			corev1.ConditionFalse, reasonMinUnavailable, new(int32(0))},
		{"a synced ReplicaSet without the count", newDeployment(1, "", ""),
			[]*appsv1.ReplicaSet{testRS("a", 1, 0, available(1), func(rs *appsv1.ReplicaSet) { rs.Status.TerminatingReplicas = nil })},
			corev1.ConditionTrue, reasonMinAvailable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rs := range tt.rss {
				if rs.Status.TerminatingReplicas == nil && tt.terminating != nil {
					rs.Status.TerminatingReplicas = new(int32(0))
				}
			}
			st := calculateStatus(tt.d, tt.rss, tt.rss[0], t0)
			c := getCondition(st, appsv1.DeploymentAvailable)
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason {
				t.Errorf("Available %+v, want %s %s", c, tt.wantStatus, tt.wantReason)
			}
			if (st.TerminatingReplicas == nil) != (tt.terminating == nil) {
				t.Errorf("terminating %v, want %v", st.TerminatingReplicas, tt.terminating)
			}
		})
	}
}

func equalStatus(a, b appsv1.DeploymentStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.Replicas == b.Replicas && a.UpdatedReplicas == b.UpdatedReplicas &&
		a.ReadyReplicas == b.ReadyReplicas && a.AvailableReplicas == b.AvailableReplicas &&
		a.UnavailableReplicas == b.UnavailableReplicas && *a.TerminatingReplicas == *b.TerminatingReplicas &&
		*a.CollisionCount == *b.CollisionCount
}

func TestRolloutStatus(t *testing.T) {
	done := testRS("web-abc", 4, 0, available(4))
	halfway := testRS("web-abc", 2, 0, available(2))
	old := testRS("old", 2, 10, available(2))
	failing := testRS("web-abc", 2, 0, pods(0), func(rs *appsv1.ReplicaSet) {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: "quota", LastTransitionTime: metav1.NewTime(t0)}}
	})
	noDeadline := func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = new(int32(math.MaxInt32)) }
	tests := []struct {
		name        string
		d           *appsv1.Deployment
		rss         []*appsv1.ReplicaSet
		newRS       *appsv1.ReplicaSet
		wantStatus  corev1.ConditionStatus
		wantReason  string
		wantMessage string
		wantUpdate  time.Time
	}{
		{"complete", newDeployment(4, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, time.Minute, 4, 2, 2)),
			[]*appsv1.ReplicaSet{done}, done, corev1.ConditionTrue, reasonNewRSAvailable, `ReplicaSet "web-abc" has successfully progressed.`, t0},
		{"progress", newDeployment(4, "", "", progressing(reasonNewRSCreated, corev1.ConditionTrue, time.Minute, 4, 1, 3)),
			[]*appsv1.ReplicaSet{old, halfway}, halfway, corev1.ConditionTrue, reasonRSUpdated, `ReplicaSet "web-abc" is progressing.`, t0},
		{"no progress yet", newDeployment(4, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, time.Minute, 4, 2, 4)),
			[]*appsv1.ReplicaSet{old, halfway}, halfway, corev1.ConditionTrue, reasonRSUpdated, "before", t0.Add(-time.Minute)},
		{"no progress for longer than the deadline", newDeployment(4, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, 11*time.Minute, 4, 2, 4)),
			[]*appsv1.ReplicaSet{old, halfway}, halfway, corev1.ConditionFalse, reasonTimedOut, `ReplicaSet "web-abc" has timed out progressing.`, t0},
		{"timed out stays timed out", newDeployment(4, "", "", progressing(reasonTimedOut, corev1.ConditionFalse, time.Minute, 4, 2, 4)),
			[]*appsv1.ReplicaSet{old, halfway}, halfway, corev1.ConditionFalse, reasonTimedOut, "before", t0.Add(-time.Minute)},
		{"completed rollouts are not watched", newDeployment(4, "", "", progressing(reasonNewRSAvailable, corev1.ConditionTrue, time.Hour, 4, 4, 4)),
			[]*appsv1.ReplicaSet{testRS("web-abc", 4, 0, available(2))}, done, corev1.ConditionTrue, reasonNewRSAvailable, "before", t0.Add(-time.Hour)},
		{"no new ReplicaSet yet", newDeployment(4, "", "", recreate, progressing(reasonRSUpdated, corev1.ConditionTrue, time.Minute, 4, 0, 4)),
			[]*appsv1.ReplicaSet{testRS("old", 0, 10)}, nil, corev1.ConditionTrue, reasonRSUpdated, `Deployment "web" is progressing.`, t0},
		{"no deadline", newDeployment(4, "", "", noDeadline, progressing(reasonRSUpdated, corev1.ConditionTrue, time.Hour, 4, 2, 4)),
			[]*appsv1.ReplicaSet{old, halfway}, halfway, "", "", "", time.Time{}},
		{"replica failure", newDeployment(2, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, time.Minute, 0, 0, 0)),
			[]*appsv1.ReplicaSet{failing}, failing, corev1.ConditionTrue, reasonRSUpdated, "before", t0.Add(-time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := rolloutStatus(tt.d, tt.rss, tt.newRS, t0)
			c := getCondition(st, appsv1.DeploymentProgressing)
			if tt.wantReason == "" {
				if c != nil {
					t.Errorf("Progressing %+v, want none", c)
				}
				return
			}
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.Message != tt.wantMessage || !c.LastUpdateTime.Time.Equal(tt.wantUpdate) {
				t.Fatalf("Progressing %+v\nwant %s %s %q updated %v", c, tt.wantStatus, tt.wantReason, tt.wantMessage, tt.wantUpdate)
			}
			if c.Status == corev1.ConditionTrue && tt.d.Status.Conditions[0].Status == corev1.ConditionTrue &&
				!c.LastTransitionTime.Equal(&tt.d.Status.Conditions[0].LastTransitionTime) {
				t.Errorf("transition time %v moved while the status stayed True", c.LastTransitionTime)
			}
			failure := getCondition(st, appsv1.DeploymentReplicaFailure)
			if (failure != nil) != (tt.newRS == failing) {
				t.Errorf("ReplicaFailure %+v", failure)
			}
			if failure != nil && (failure.Reason != "FailedCreate" || failure.Message != "quota") {
				t.Errorf("ReplicaFailure %+v", failure)
			}
		})
	}
}

func TestProgressCheckAfter(t *testing.T) {
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		status appsv1.DeploymentStatus
		want   time.Duration
		ok     bool
	}{
		{"deadline ahead", newDeployment(4, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, 100*time.Second, 4, 2, 4)),
			appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 2}, 501 * time.Second, true},
		{"deadline passed", newDeployment(4, "", "", progressing(reasonResumed, corev1.ConditionUnknown, time.Hour, 4, 2, 4)),
			appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 2}, time.Second, true},
		{"complete", newDeployment(4, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, 100*time.Second, 4, 2, 4)),
			appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4, ObservedGeneration: 1}, 0, false},
		{"timed out", newDeployment(4, "", "", progressing(reasonTimedOut, corev1.ConditionFalse, time.Hour, 4, 2, 4)),
			appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 2}, 0, false},
		{"completed before", newDeployment(4, "", "", progressing(reasonNewRSAvailable, corev1.ConditionTrue, time.Hour, 4, 4, 3)),
			appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 3}, 0, false},
		{"no condition", newDeployment(4, "", ""), appsv1.DeploymentStatus{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := progressCheckAfter(tt.d, tt.status, t0)
			if got != tt.want || ok != tt.ok {
				t.Errorf("progressCheckAfter = %v %v, want %v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestPausedCondition(t *testing.T) {
	paused := func(d *appsv1.Deployment) { d.Spec.Paused = true }
	tests := []struct {
		name       string
		d          *appsv1.Deployment
		wantReason string
	}{
		{"paused", newDeployment(1, "", "", paused, progressing(reasonNewRSAvailable, corev1.ConditionTrue, 0, 1, 1, 1)), reasonPaused},
		{"paused, no condition yet", newDeployment(1, "", "", paused), reasonPaused},
		{"still paused", newDeployment(1, "", "", paused, progressing(reasonPaused, corev1.ConditionUnknown, 0, 1, 1, 1)), ""},
		{"resumed", newDeployment(1, "", "", progressing(reasonPaused, corev1.ConditionUnknown, 0, 1, 1, 1)), reasonResumed},
		{"never paused", newDeployment(1, "", "", progressing(reasonRSUpdated, corev1.ConditionTrue, 0, 1, 1, 1)), ""},
		{"timed out before the pause", newDeployment(1, "", "", paused, progressing(reasonTimedOut, corev1.ConditionFalse, 0, 1, 1, 1)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := pausedCondition(tt.d, t0)
			if ok != (tt.wantReason != "") || c.Reason != tt.wantReason {
				t.Fatalf("condition %+v %v, want reason %q", c, ok, tt.wantReason)
			}
			if ok && (c.Status != corev1.ConditionUnknown || c.Type != appsv1.DeploymentProgressing) {
				t.Errorf("condition %+v", c)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	var st appsv1.DeploymentStatus
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, reasonMinAvailable, "m", t0))
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, reasonMinAvailable, "m", t0.Add(time.Hour)))
	if c := st.Conditions[0]; len(st.Conditions) != 1 || !c.LastUpdateTime.Time.Equal(t0) {
		t.Fatalf("same status and reason replaced the condition: %+v", st.Conditions)
	}
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "Other", "m", t0.Add(time.Hour)))
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t0) || !c.LastUpdateTime.Time.Equal(t0.Add(time.Hour)) || c.Reason != "Other" {
		t.Fatalf("new reason, same status: %+v", c)
	}
	setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "Down", "m", t0.Add(2*time.Hour)))
	if c := st.Conditions[0]; !c.LastTransitionTime.Time.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("status change kept the transition time: %+v", c)
	}
}
