package plugins

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// spreadOver spreads the pods labelled with the "key", "value" pairs kv
// over topologyKey's domains.
func spreadOver(topologyKey string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, kv ...string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{TopologyKey: topologyKey, MaxSkew: maxSkew, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labelMap(kv...)}}
}

func withSpread(cs ...corev1.TopologySpreadConstraint) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints = cs }
}

// ownedBy adds an ownerReference to the ReplicaSet with uid.
func ownedBy(uid string, controller bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: &controller})
	}
}

// spreadNodes are two nodes in zone a and one in zone b in pool main, one
// in zone c in pool spare, and one without any topology label.
func spreadNodes() []*corev1.Node {
	return []*corev1.Node{
		zonedNode("a1", "a", "pool", "main"), zonedNode("a2", "a", "pool", "main"), zonedNode("b1", "b", "pool", "main"),
		zonedNode("c1", "c", "pool", "spare"), testNode("bare"),
	}
}

func TestPodTopologySpreadFilter(t *testing.T) {
	const (
		skewed       = "node(s) didn't match pod topology spread constraints"
		missingLabel = "node(s) didn't match pod topology spread constraints (missing required label)"
	)
	// Web pods per zone: a 2, b 1, c 1; the db pods do not count.
	twoOneOne := map[string][]*corev1.Pod{
		"a1": {appPod("web-1", "web")},
		"a2": {appPod("web-2", "web")},
		"b1": {appPod("web-3", "web"), appPod("db-1", "db"), appPod("db-2", "db")},
		"c1": {appPod("web-4", "web")},
	}
	// Web pods per zone: a 2, b 1, c 0.
	twoOneZero := map[string][]*corev1.Pod{
		"a1": {appPod("web-1", "web"), appPod("web-2", "web")},
		"b1": {appPod("web-3", "web")},
	}
	zoneHard := func(maxSkew int32) corev1.TopologySpreadConstraint {
		return spreadOver(zoneKey, maxSkew, corev1.DoNotSchedule, "app", "web")
	}
	tests := []struct {
		name   string
		placed map[string][]*corev1.Pod // by node name
		pod    *corev1.Pod
		want   map[string][]string // unfit nodes' reasons
	}{
		{
			name:   "maxSkew 1 over zones 2/1/1: only the zones with one pod fit",
			placed: twoOneOne,
			pod:    appPod("p", "web", withSpread(zoneHard(1))),
			want:   map[string][]string{"a1": {skewed}, "a2": {skewed}, "bare": {missingLabel}},
		},
		{
			name:   "maxSkew 2 over zones 2/1/1: every zone fits",
			placed: twoOneOne,
			pod:    appPod("p", "web", withSpread(zoneHard(2))),
			want:   map[string][]string{"bare": {missingLabel}},
		},
		{
			name:   "a pod not matching its own selector does not add to the skew",
			placed: twoOneOne,
			pod:    appPod("p", "api", withSpread(zoneHard(1))),
			want:   map[string][]string{"bare": {missingLabel}},
		},
		{
			name:   "an empty zone is the minimum",
			placed: twoOneZero,
			pod:    appPod("p", "web", withSpread(zoneHard(1))),
			want:   map[string][]string{"a1": {skewed}, "a2": {skewed}, "b1": {skewed}, "bare": {missingLabel}},
		},
		{
			// c1 is left to NodeAffinity: its zone is not counted, so it
			// has nothing to be skewed against.
			name:   "nodes the pod's nodeSelector excludes are not domains",
			placed: twoOneZero,
			pod:    appPod("p", "web", withSpread(zoneHard(1)), withNodeSelector("pool", "main")),
			want:   map[string][]string{"a1": {skewed}, "a2": {skewed}, "bare": {missingLabel}},
		},
		{
			name: "pods in other namespaces do not count",
			placed: map[string][]*corev1.Pod{
				"a1": {appPod("web-1", "web", inNamespace("other")), appPod("web-2", "web", inNamespace("other"))},
				"b1": {appPod("web-3", "web")},
			},
			pod:  appPod("p", "web", withSpread(zoneHard(1))),
			want: map[string][]string{"b1": {skewed}, "bare": {missingLabel}},
		},
		{
			name:   "maxSkew 1 over hostnames",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}},
			pod:    appPod("p", "web", withSpread(spreadOver(hostKey, 1, corev1.DoNotSchedule, "app", "web"))),
			want:   map[string][]string{"a1": {skewed}, "bare": {missingLabel}},
		},
		{
			name:   "every DoNotSchedule constraint must hold",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}},
			pod:    appPod("p", "web", withSpread(zoneHard(3), spreadOver(hostKey, 1, corev1.DoNotSchedule, "app", "web"))),
			want:   map[string][]string{"a1": {skewed}, "bare": {missingLabel}},
		},
		{
			name:   "a constraint without a labelSelector counts no pods",
			placed: twoOneOne,
			pod:    appPod("p", "web", withSpread(corev1.TopologySpreadConstraint{TopologyKey: zoneKey, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule})),
			want:   map[string][]string{"bare": {missingLabel}},
		},
		{
			name:   "ScheduleAnyway constraints do not filter",
			placed: twoOneOne,
			pod:    appPod("p", "web", withSpread(spreadOver(zoneKey, 1, corev1.ScheduleAnyway, "app", "web"))),
			want:   map[string][]string{},
		},
		{
			name:   "default spreading of a controller's pods does not filter",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", ownedBy("rs-1", true)), appPod("web-2", "web", ownedBy("rs-1", true))}},
			pod:    appPod("p", "web", ownedBy("rs-1", true)),
			want:   map[string][]string{},
		},
		{
			name:   "no constraints and no owner: every node fits",
			placed: twoOneOne,
			pod:    appPod("p", "web"),
			want:   map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCycleFilter(PodTopologySpread{}, tt.pod, cluster(spreadNodes(), tt.placed))
			if !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("unfit nodes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodTopologySpreadScore(t *testing.T) {
	nodes := spreadNodes()[:4] // a1, a2, b1, c1: see TestPodTopologySpreadScoreUnlabelledNode
	// Web pods per zone: a 2, b 1, c 0.
	webs := map[string][]*corev1.Pod{
		"a1": {appPod("web-1", "web")},
		"a2": {appPod("web-2", "web")},
		"b1": {appPod("web-3", "web")},
		"c1": {appPod("db-1", "db"), appPod("web-4", "web", inNamespace("other"))},
	}
	// Pods of ReplicaSet rs-1: a1 2, b1 1; c1 holds pods of rs-2, of
	// nobody, and one only owned (not controlled) by rs-1.
	replicas := map[string][]*corev1.Pod{
		"a1": {appPod("rs-1-a", "web", ownedBy("rs-1", true)), appPod("rs-1-b", "web", ownedBy("rs-1", true))},
		"b1": {appPod("rs-1-c", "web", ownedBy("rs-1", true))},
		"c1": {
			appPod("rs-2-a", "web", ownedBy("rs-2", true)), appPod("rs-2-b", "web", ownedBy("rs-2", true)),
			appPod("orphan", "web"), appPod("adopted", "web", ownedBy("rs-1", false)),
		},
	}
	tests := []struct {
		name       string
		placed     map[string][]*corev1.Pod
		pod        *corev1.Pod
		raw        []int64 // a1, a2, b1, c1
		normalized []int64
	}{
		{
			name:       "ScheduleAnyway over zones: the emptiest zone scores 100",
			placed:     webs,
			pod:        appPod("p", "web", withSpread(spreadOver(zoneKey, 1, corev1.ScheduleAnyway, "app", "web"))),
			raw:        []int64{2, 2, 1, 0},
			normalized: []int64{0, 0, 50, 100},
		},
		{
			name:       "ScheduleAnyway over hostnames",
			placed:     webs,
			pod:        appPod("p", "web", withSpread(spreadOver(hostKey, 1, corev1.ScheduleAnyway, "app", "web"))),
			raw:        []int64{1, 1, 1, 0},
			normalized: []int64{0, 0, 0, 100},
		},
		{
			name:   "ScheduleAnyway constraints add up",
			placed: webs,
			pod: appPod("p", "web", withSpread(
				spreadOver(zoneKey, 1, corev1.ScheduleAnyway, "app", "web"), spreadOver(hostKey, 1, corev1.ScheduleAnyway, "app", "web"))),
			raw:        []int64{3, 3, 2, 0},
			normalized: []int64{0, 0, 34, 100},
		},
		{
			name:       "DoNotSchedule constraints do not score",
			placed:     webs,
			pod:        appPod("p", "web", withSpread(spreadOver(zoneKey, 1, corev1.DoNotSchedule, "app", "web"))),
			raw:        []int64{0, 0, 0, 0},
			normalized: []int64{100, 100, 100, 100},
		},
		{
			name:       "default spreading counts the pods of the same controller by host and zone",
			placed:     replicas,
			pod:        appPod("p", "web", ownedBy("rs-1", true)),
			raw:        []int64{4, 2, 2, 0},
			normalized: []int64{0, 50, 50, 100},
		},
		{
			name:       "no default spreading for a pod without a controller",
			placed:     replicas,
			pod:        appPod("p", "web"),
			raw:        []int64{0, 0, 0, 0},
			normalized: []int64{100, 100, 100, 100},
		},
		{
			name:       "no default spreading for an owner that is not the controller",
			placed:     replicas,
			pod:        appPod("p", "web", ownedBy("rs-1", false)),
			raw:        []int64{0, 0, 0, 0},
			normalized: []int64{100, 100, 100, 100},
		},
		{
			name:       "the pod's own constraints replace default spreading",
			placed:     replicas,
			pod:        appPod("p", "web", ownedBy("rs-1", true), withSpread(spreadOver(zoneKey, 1, corev1.DoNotSchedule, "app", "web"))),
			raw:        []int64{0, 0, 0, 0},
			normalized: []int64{100, 100, 100, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, normalized := runCycleScores(t, PodTopologySpread{}, tt.pod, cluster(nodes, tt.placed))
			if !slices.Equal(raw, tt.raw) {
				t.Errorf("scores = %v, want %v", raw, tt.raw)
			}
			if !slices.Equal(normalized, tt.normalized) {
				t.Errorf("normalized scores = %v, want %v", normalized, tt.normalized)
			}
		})
	}
}

// A node without the topology key of a ScheduleAnyway constraint is in no
// domain. kube-scheduler leaves such a node out of the scoring (it ends
// with score 0); it must not look like the emptiest domain.
func TestPodTopologySpreadScoreUnlabelledNode(t *testing.T) {
	placed := map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}}
	pod := appPod("p", "web", withSpread(spreadOver(zoneKey, 1, corev1.ScheduleAnyway, "app", "web")))
	_, normalized := runCycleScores(t, PodTopologySpread{}, pod, cluster(spreadNodes(), placed)) // a1, a2, b1, c1, bare
	if want := []int64{0, 0, 100, 100, 0}; !slices.Equal(normalized, want) {
		t.Errorf("normalized scores = %v, want %v", normalized, want)
	}
}
