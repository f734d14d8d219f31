package deployment

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func TestIsScalingEvent(t *testing.T) {
	d := newDeployment(5, "", "")
	tests := []struct {
		name   string
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   bool
	}{
		{"sized for 5", testRS("new", 5, 0, sized(5, 7)), nil, false},
		{"sized for 3", testRS("new", 3, 0, sized(3, 4)), nil, true},
		{"old active ReplicaSet sized for 3", testRS("new", 1, 0, sized(5, 7)),
			[]*appsv1.ReplicaSet{testRS("old", 2, 10, sized(3, 4))}, true},
		{"inactive ReplicaSets do not count", testRS("new", 5, 0, sized(5, 7)),
			[]*appsv1.ReplicaSet{testRS("old", 0, 10, sized(3, 4))}, false},
		{"no annotation", testRS("new", 3, 0), nil, false},
		{"no new ReplicaSet", nil, []*appsv1.ReplicaSet{testRS("old", 3, 10, sized(3, 4))}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isScalingEvent(d, tt.newRS, tt.oldRSs); got != tt.want {
				t.Errorf("isScalingEvent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScalePlan(t *testing.T) {
	surge3 := func(replicas int32, status int32) *appsv1.Deployment {
		d := newDeployment(replicas, "3", "2")
		d.Status.Replicas = status
		return d
	}
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   []string
	}{
		{"one active ReplicaSet takes all", newDeployment(5, "", ""), testRS("new", 3, 0, sized(3, 4)),
			[]*appsv1.ReplicaSet{testRS("old", 0, 10)}, []string{"new=5"}},
		{"paused mid-template-change: the old one takes all", newDeployment(5, "", ""), nil,
			[]*appsv1.ReplicaSet{testRS("old", 3, 10, sized(3, 4))}, []string{"old=5"}},
		{"none active: the new one", newDeployment(2, "", ""), testRS("new", 0, 0),
			[]*appsv1.ReplicaSet{testRS("old", 0, 10)}, []string{"new=2"}},
		{"none active, no new one: the newest", newDeployment(2, "", ""), nil,
			[]*appsv1.ReplicaSet{testRS("older", 0, 20), testRS("newer", 0, 10)}, []string{"newer=2"}},
		{"already at size", newDeployment(3, "", ""), testRS("new", 3, 0, sized(3, 4)), nil, nil},
		{"saturated new ReplicaSet: old ones go", newDeployment(3, "", ""), testRS("new", 3, 0, sized(3, 4), available(3)),
			[]*appsv1.ReplicaSet{testRS("old", 1, 10, sized(2, 3))}, []string{"old=0"}},
		{"proportional scale-up", surge3(20, 13), testRS("new", 5, 0, sized(10, 13)),
			[]*appsv1.ReplicaSet{testRS("old", 8, 10, sized(10, 13))}, []string{"old=14", "new=9"}},
		{"proportional scale-down", surge3(10, 23), testRS("new", 9, 0, sized(20, 23)),
			[]*appsv1.ReplicaSet{testRS("old", 14, 10, sized(20, 23))}, []string{"old=8", "new=5"}},
		{"to zero", surge3(0, 13), testRS("new", 5, 0, sized(10, 13)),
			[]*appsv1.ReplicaSet{testRS("old", 8, 10, sized(10, 13))}, []string{"old=0", "new=0"}},
		{"lost annotations: the current size is the base", surge3(20, 13), testRS("new", 5, 0),
			[]*appsv1.ReplicaSet{testRS("old", 8, 10)}, []string{"old=14", "new=9"}},
		{"rounding leftover to the newest of equals when adding", newDeployment(4, "0", "1"), testRS("c", 1, 10, sized(3, 3)),
			[]*appsv1.ReplicaSet{testRS("a", 1, 30, sized(3, 3)), testRS("b", 1, 20, sized(3, 3))}, []string{"c=2", "b=1", "a=1"}},
		{"and from the oldest when removing", newDeployment(2, "0", "1"), testRS("c", 1, 10, sized(3, 3)),
			[]*appsv1.ReplicaSet{testRS("a", 1, 30, sized(3, 3)), testRS("b", 1, 20, sized(3, 3))}, []string{"a=0", "b=1", "c=1"}},
		{"recreate is not spread", newDeployment(5, "", "", recreate), testRS("new", 1, 0, sized(3, 3)),
			[]*appsv1.ReplicaSet{testRS("old", 2, 10, sized(3, 3))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(scalePlan(tt.d, tt.newRS, tt.oldRSs)); !slices.Equal(got, tt.want) {
				t.Errorf("plan %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryToDelete(t *testing.T) {
	limit := func(n int32) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = &n }
	}
	deleting := func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = new(rs.CreationTimestamp) }
	stale := func(rs *appsv1.ReplicaSet) { rs.Generation = 2 }
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		oldRSs []*appsv1.ReplicaSet
		want   []string
	}{
		{"within the limit", newDeployment(1, "", "", limit(3)),
			[]*appsv1.ReplicaSet{testRS("r1", 0, 30, rev(1)), testRS("r2", 0, 20, rev(2))}, nil},
		{"lowest revisions first", newDeployment(1, "", "", limit(2)),
			[]*appsv1.ReplicaSet{testRS("r5", 0, 10, rev(5)), testRS("r2", 0, 40, rev(2)), testRS("r4", 0, 20, rev(4)), testRS("r1", 0, 50, rev(1))},
			[]string{"r1", "r2"}},
		{"revision, not age", newDeployment(1, "", "", limit(1)),
			[]*appsv1.ReplicaSet{testRS("rolled-back", 0, 50, rev(3)), testRS("r2", 0, 10, rev(2))}, []string{"r2"}},
		{"limit 0 deletes every old one", newDeployment(1, "", "", limit(0)),
			[]*appsv1.ReplicaSet{testRS("r1", 0, 30, rev(1)), testRS("r2", 0, 20, rev(2))}, []string{"r1", "r2"}},
		{"only scaled down, drained and observed ones", newDeployment(1, "", "", limit(0)),
			[]*appsv1.ReplicaSet{testRS("sized", 1, 50, rev(1)), testRS("draining", 0, 40, rev(2), pods(1)),
				testRS("stale", 0, 30, rev(3), stale), testRS("ok", 0, 20, rev(4))}, []string{"ok"}},
		{"being deleted: neither counted nor deleted", newDeployment(1, "", "", limit(1)),
			[]*appsv1.ReplicaSet{testRS("r1", 0, 30, rev(1), deleting), testRS("r2", 0, 20, rev(2)), testRS("r3", 0, 10, rev(3))}, []string{"r2"}},
		{"no limit", newDeployment(1, "", "", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = nil }),
			[]*appsv1.ReplicaSet{testRS("r1", 0, 30, rev(1))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, rs := range historyToDelete(tt.d, tt.oldRSs) {
				got = append(got, rs.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("delete %v, want %v", got, tt.want)
			}
		})
	}
}
