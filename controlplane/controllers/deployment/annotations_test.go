package deployment

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := newDeployment(4, "", "", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{
			"kubernetes.io/change-cause":       "kubectl set image",
			corev1.LastAppliedConfigAnnotation: "{}",
			revisionAnnotation:                 "7",
		}
	})
	tests := []struct {
		name        string
		rs          *appsv1.ReplicaSet
		revision    int64
		exists      bool
		wantChanged bool
		want        map[string]string
	}{
		{"about to be created", testRS("new", 0, 0), 1, false, true, map[string]string{
			"kubernetes.io/change-cause": "kubectl set image", revisionAnnotation: "1",
			desiredReplicasAnnotation: "4", maxReplicasAnnotation: "5",
		}},
		{"rolled back to", testRS("new", 0, 0, rev(1), sized(4, 5)), 3, true, true, map[string]string{
			"kubernetes.io/change-cause": "kubectl set image", revisionAnnotation: "3", revisionHistoryAnnotation: "1",
			desiredReplicasAnnotation: "4", maxReplicasAnnotation: "5",
		}},
		{"rolled back to again", testRS("new", 0, 0, rev(3), annotate(revisionHistoryAnnotation, "1")), 5, true, true, map[string]string{
			"kubernetes.io/change-cause": "kubectl set image", revisionAnnotation: "5", revisionHistoryAnnotation: "1,3",
		}},
		{"up to date", testRS("new", 0, 0, rev(2), annotate("kubernetes.io/change-cause", "kubectl set image")), 2, true, false, map[string]string{
			"kubernetes.io/change-cause": "kubectl set image", revisionAnnotation: "2",
		}},
		{"a higher revision stays", testRS("new", 0, 0, rev(9), annotate("kubernetes.io/change-cause", "kubectl set image")), 2, true, false, map[string]string{
			"kubernetes.io/change-cause": "kubectl set image", revisionAnnotation: "9",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := setNewReplicaSetAnnotations(d, tt.rs, tt.revision, tt.exists)
			if changed != tt.wantChanged || !maps.Equal(tt.rs.Annotations, tt.want) {
				t.Errorf("changed %v annotations %v, want %v %v", changed, tt.rs.Annotations, tt.wantChanged, tt.want)
			}
		})
	}
}

func TestAppendRevisionHistory(t *testing.T) {
	if got := appendRevisionHistory("", "4"); got != "4" {
		t.Errorf("got %q", got)
	}
	if got := appendRevisionHistory("1,2", "4"); got != "1,2,4" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("1234,", 400) + "1234" // 2004 characters
	got := appendRevisionHistory(long, "99")
	if len(got) > maxRevisionHistoryChars || !strings.HasSuffix(got, ",1234,99") {
		t.Errorf("history of %d characters ending %q", len(got), got[len(got)-10:])
	}
}

func TestMaxRevision(t *testing.T) {
	rss := []*appsv1.ReplicaSet{testRS("a", 0, 0, rev(3)), testRS("b", 0, 0, annotate(revisionAnnotation, "x")), testRS("c", 0, 0, rev(12)), testRS("d", 0, 0)}
	if got := maxRevision(rss); got != 12 {
		t.Errorf("maxRevision %d, want 12", got)
	}
	if got := maxRevision(nil); got != 0 {
		t.Errorf("maxRevision of nothing %d, want 0", got)
	}
}
