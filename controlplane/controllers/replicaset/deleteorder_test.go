package replicaset

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSortForDeletion(t *testing.T) {
	now := t0.Add(time.Hour)
	sidecar := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", RestartCount: n}}
		}
	}
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		onNode map[string]int
		want   []string
	}{
		{
			name: "unassigned before assigned",
			pods: []*corev1.Pod{newPod("assigned", onNode("n1")), newPod("unassigned")},
			want: []string{"unassigned", "assigned"},
		},
		{
			name: "pending before unknown before running",
			pods: []*corev1.Pod{
				newPod("running", onNode("n1"), phase(corev1.PodRunning)),
				newPod("unknown", onNode("n1"), phase(corev1.PodUnknown)),
				newPod("pending", onNode("n1"), phase(corev1.PodPending)),
			},
			want: []string{"pending", "unknown", "running"},
		},
		{
			name: "unassigned running before assigned pending",
			pods: []*corev1.Pod{newPod("assigned", onNode("n1")), newPod("unassigned", phase(corev1.PodRunning))},
			want: []string{"unassigned", "assigned"},
		},
		{
			name: "not ready before ready",
			pods: []*corev1.Pod{
				newPod("ready", onNode("n1"), readyAt(t0)),
				newPod("not-ready", onNode("n1"), phase(corev1.PodRunning)),
			},
			want: []string{"not-ready", "ready"},
		},
		{
			name: "lower deletion cost first, invalid cost is zero",
			pods: []*corev1.Pod{
				newPod("cost-10", deletionCostOf("10")),
				newPod("cost-invalid", deletionCostOf("lots")),
				newPod("cost-minus-5", deletionCostOf("-5")),
			},
			want: []string{"cost-minus-5", "cost-invalid", "cost-10"},
		},
		{
			name:   "crowded node first",
			pods:   []*corev1.Pod{newPod("alone", onNode("n1")), newPod("crowded", onNode("n2"))},
			onNode: map[string]int{"n1": 1, "n2": 3},
			want:   []string{"crowded", "alone"},
		},
		{
			name: "ready for a shorter time first",
			pods: []*corev1.Pod{
				newPod("ready-long", onNode("n1"), readyAt(t0)),
				newPod("ready-short", onNode("n1"), readyAt(now.Add(-time.Minute))),
			},
			want: []string{"ready-short", "ready-long"},
		},
		{
			name: "more restarts first",
			pods: []*corev1.Pod{
				newPod("restarts-1", restarts(1)),
				newPod("restarts-9", restarts(9)),
				newPod("sidecar-5", sidecar(5)),
			},
			want: []string{"restarts-9", "sidecar-5", "restarts-1"},
		},
		{
			name: "restarts outweigh age",
			pods: []*corev1.Pod{newPod("new", created(now.Add(-time.Second))), newPod("old-restarted", restarts(2))},
			want: []string{"old-restarted", "new"},
		},
		{
			name: "newer before older",
			pods: []*corev1.Pod{
				newPod("hour", created(now.Add(-time.Hour))),
				newPod("second", created(now.Add(-time.Second))),
				newPod("minute", created(now.Add(-time.Minute))),
			},
			want: []string{"second", "minute", "hour"},
		},
		{
			name: "similar ages by uid",
			pods: []*corev1.Pod{
				newPod("b", created(now.Add(-40*time.Minute))),
				newPod("a", created(now.Add(-50*time.Minute))),
			},
			want: []string{"a", "b"},
		},
		{
			name: "zero creation time first",
			pods: []*corev1.Pod{newPod("dated"), newPod("undated", created(time.Time{}))},
			want: []string{"undated", "dated"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, perm := range [][]*corev1.Pod{tt.pods, reversed(tt.pods)} {
				sortForDeletion(perm, tt.onNode, now)
				if got := names(perm); !slices.Equal(got, tt.want) {
					t.Errorf("order = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func reversed(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.Reverse(out)
	return out
}

func TestPodsToDelete(t *testing.T) {
	now := t0.Add(time.Hour)
	a := newPod("a", onNode("n1"), readyAt(t0))
	b := newPod("b", onNode("n2"), readyAt(t0))
	c := newPod("c", onNode("n2"), readyAt(t0))
	sibling := newPod("sibling", onNode("n1"))
	gone := newPod("gone", onNode("n1"), deleting)
	tests := []struct {
		name    string
		related []*corev1.Pod
		n       int
		want    []string
	}{
		{name: "all", n: 3, want: []string{"a", "b", "c"}},
		{name: "crowded node n2", related: []*corev1.Pod{a, b, c}, n: 1, want: []string{"b"}},
		{name: "sibling pods count", related: []*corev1.Pod{a, b, c, sibling, sibling}, n: 1, want: []string{"a"}},
		{name: "inactive related pods do not", related: []*corev1.Pod{a, b, c, gone, gone}, n: 2, want: []string{"b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active := []*corev1.Pod{a, b, c}
			got := names(podsToDelete(active, tt.related, tt.n, now))
			if !slices.Equal(got, tt.want) {
				t.Errorf("podsToDelete = %v, want %v", got, tt.want)
			}
			if !slices.Equal(names(active), []string{"a", "b", "c"}) {
				t.Errorf("active was reordered: %v", names(active))
			}
		})
	}
}
