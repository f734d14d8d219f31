package deployment

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	tests := []struct {
		surge, unavailable string
		desired            int32
		wantSurge, wantU   int32
		wantErr            bool
	}{
		{"25%", "25%", 4, 1, 1, false},
		{"25%", "25%", 10, 3, 2, false}, // surge rounds up, unavailable down
		{"25%", "25%", 1, 1, 0, false},
		{"10%", "10%", 5, 1, 0, false},
		{"0", "10%", 5, 0, 1, false}, // both 0 after rounding: unavailable 1
		{"0%", "0%", 0, 0, 1, false},
		{"1", "0", 3, 1, 0, false},
		{"50%", "1", 3, 2, 1, false},
		{"3", "2", 10, 3, 2, false},
		{"x%", "1", 3, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.surge+"/"+tt.unavailable, func(t *testing.T) {
			s, u := intstr.Parse(tt.surge), intstr.Parse(tt.unavailable)
			surge, unavailable, err := resolveFenceposts(&s, &u, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && (surge != tt.wantSurge || unavailable != tt.wantU) {
				t.Errorf("of %d: surge %d unavailable %d, want %d and %d", tt.desired, surge, unavailable, tt.wantSurge, tt.wantU)
			}
		})
	}
	if surge, unavailable, _ := resolveFenceposts(nil, nil, 4); surge != 0 || unavailable != 1 {
		t.Errorf("nil fenceposts: surge %d unavailable %d, want 0 and 1", surge, unavailable)
	}
}

func TestMaxSurgeMaxUnavailable(t *testing.T) {
	tests := []struct {
		name                  string
		d                     *appsv1.Deployment
		wantSurge, wantUnavai int32
	}{
		{"defaults of 4", newDeployment(4, "", ""), 1, 1},
		{"unavailable capped at replicas", newDeployment(3, "0", "5"), 0, 3},
		{"no replicas", newDeployment(0, "1", "1"), 1, 0},
		{"recreate", newDeployment(4, "", "", recreate), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, u := maxSurge(tt.d), maxUnavailable(tt.d); s != tt.wantSurge || u != tt.wantUnavai {
				t.Errorf("maxSurge %d maxUnavailable %d, want %d and %d", s, u, tt.wantSurge, tt.wantUnavai)
			}
		})
	}
}

func TestRollingNewSize(t *testing.T) {
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   int32
	}{
		{"first step surges by one", newDeployment(4, "", ""), testRS("new", 0, 0),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10, available(4))}, 1},
		{"at replicas+maxSurge", newDeployment(4, "", ""), testRS("new", 2, 0),
			[]*appsv1.ReplicaSet{testRS("old", 3, 10, available(3))}, 2},
		{"room for more than one", newDeployment(4, "", ""), testRS("new", 2, 0),
			[]*appsv1.ReplicaSet{testRS("old", 1, 10, available(1))}, 4},
		{"never above replicas", newDeployment(4, "3", "0"), testRS("new", 2, 0), nil, 4},
		{"larger surge", newDeployment(4, "3", "0"), testRS("new", 0, 0),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10)}, 3},
		{"no surge", newDeployment(4, "0", "1"), testRS("new", 0, 0),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10)}, 0},
		{"no surge after a scale-down", newDeployment(4, "0", "1"), testRS("new", 0, 0),
			[]*appsv1.ReplicaSet{testRS("old", 3, 10)}, 1},
		{"several old", newDeployment(4, "", ""), testRS("new", 1, 0),
			[]*appsv1.ReplicaSet{testRS("old1", 2, 20), testRS("old2", 2, 10)}, 1},
		{"done", newDeployment(4, "", ""), testRS("new", 4, 0), nil, 4},
		{"above replicas after a scale-down", newDeployment(4, "", ""), testRS("new", 6, 0), nil, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rollingNewSize(tt.d, withNew(tt.oldRSs, tt.newRS), tt.newRS); got != tt.want {
				t.Errorf("new size %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRollingScaleDown(t *testing.T) {
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   []string
	}{
		{"first step: one old pod may go", newDeployment(4, "", ""), testRS("new", 1, 0),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10, available(4))}, []string{"old=3"}},
		{"a new pod became available", newDeployment(4, "", ""), testRS("new", 2, 0, available(1)),
			[]*appsv1.ReplicaSet{testRS("old", 3, 10, available(3))}, []string{"old=2"}},
		{"waiting for new pods", newDeployment(4, "", ""), testRS("new", 2, 0, available(0)),
			[]*appsv1.ReplicaSet{testRS("old", 3, 10, available(3))}, nil},
		{"unavailable old pods go first, within the budget", newDeployment(4, "", ""), testRS("new", 1, 0),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10, available(2))}, []string{"old=3"}},
		{"oldest first, unhealthy then available", newDeployment(4, "1", "1"), testRS("new", 2, 0, available(2)),
			[]*appsv1.ReplicaSet{testRS("old2", 2, 10, available(1)), testRS("old1", 2, 20, available(1))},
			[]string{"old1=0", "old2=1"}},
		{"an unreported scale-down is not counted twice", newDeployment(4, "1", "1"), testRS("new", 3, 0, available(2)),
			[]*appsv1.ReplicaSet{testRS("old", 2, 10, available(4), pods(4))}, []string{"old=1"}},
		{"maxUnavailable 0", newDeployment(4, "1", "0"), testRS("new", 1, 0, available(1)),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10, available(4))}, []string{"old=3"}},
		{"maxUnavailable 0, new pod not ready", newDeployment(4, "1", "0"), testRS("new", 1, 0),
			[]*appsv1.ReplicaSet{testRS("old", 4, 10, available(4))}, nil},
		{"everything new is available", newDeployment(4, "", ""), testRS("new", 4, 0, available(4)),
			[]*appsv1.ReplicaSet{testRS("old", 1, 10, available(1))}, []string{"old=0"}},
		{"no old pods", newDeployment(4, "", ""), testRS("new", 4, 0, available(3)), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := rollingScaleDown(tt.d, withNew(tt.oldRSs, tt.newRS), active(tt.oldRSs), tt.newRS)
			if got := describe(plan); !slices.Equal(got, tt.want) {
				t.Errorf("plan %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRollingUpdateKeepsAvailability plays a whole rolling update with
// pods that become available as soon as they are asked for, and checks
// each step against maxSurge and maxUnavailable.
func TestRollingUpdateKeepsAvailability(t *testing.T) {
	for _, fp := range [][2]string{{"25%", "25%"}, {"1", "0"}, {"0", "1"}, {"3", "2"}, {"100%", "0"}} {
		t.Run(fp[0]+"/"+fp[1], func(t *testing.T) {
			d := newDeployment(10, fp[0], fp[1])
			oldRS, newRS := testRS("old", 10, 10, available(10)), testRS("new", 0, 0)
			minAvailable, maxTotal := 10-maxUnavailable(d), 10+maxSurge(d)
			for step := 0; size(newRS) < 10 || size(oldRS) > 0; step++ {
				if step > 50 {
					t.Fatalf("no end: old %d new %d", size(oldRS), size(newRS))
				}
				all := []*appsv1.ReplicaSet{oldRS, newRS}
				if target := rollingNewSize(d, all, newRS); target != size(newRS) {
					newRS.Spec.Replicas = new(target)
				} else {
					for _, r := range rollingScaleDown(d, all, active([]*appsv1.ReplicaSet{oldRS}), newRS) {
						oldRS.Spec.Replicas = new(r.replicas)
					}
				}
				// The ReplicaSet controller deletes at once; new pods take a step.
				oldRS.Status.AvailableReplicas = min(oldRS.Status.AvailableReplicas, size(oldRS))
				if got := specReplicas(all); got > maxTotal {
					t.Fatalf("step %d: %d pods, more than %d", step, got, maxTotal)
				}
				if got := availableReplicas(all); got < minAvailable {
					t.Fatalf("step %d: %d available, fewer than %d", step, got, minAvailable)
				}
				newRS.Status.AvailableReplicas = size(newRS)
			}
		})
	}
}
