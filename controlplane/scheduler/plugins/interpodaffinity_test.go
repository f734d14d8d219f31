package plugins

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	zoneKey = corev1.LabelTopologyZone
	hostKey = corev1.LabelHostname
)

// podTerm selects the pods labelled with the "key", "value" pairs kv,
// per domain of topologyKey.
func podTerm(topologyKey string, kv ...string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: labelMap(kv...)}}
}

func inNamespaces(term corev1.PodAffinityTerm, ns ...string) corev1.PodAffinityTerm {
	term.Namespaces = ns
	return term
}

func withNamespaceSelector(term corev1.PodAffinityTerm, sel *metav1.LabelSelector) corev1.PodAffinityTerm {
	term.NamespaceSelector = sel
	return term
}

func weighted(weight int32, term corev1.PodAffinityTerm) corev1.WeightedPodAffinityTerm {
	return corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term}
}

// podAffinityOf returns pod's pod affinity and anti-affinity, creating them.
func podAffinityOf(p *corev1.Pod) (*corev1.PodAffinity, *corev1.PodAntiAffinity) {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	a := p.Spec.Affinity
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	return a.PodAffinity, a.PodAntiAffinity
}

func withPodAffinity(terms ...corev1.PodAffinityTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		aff, _ := podAffinityOf(p)
		aff.RequiredDuringSchedulingIgnoredDuringExecution = terms
	}
}

func withPodAntiAffinity(terms ...corev1.PodAffinityTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		_, anti := podAffinityOf(p)
		anti.RequiredDuringSchedulingIgnoredDuringExecution = terms
	}
}

func withPreferredPodAffinity(terms ...corev1.WeightedPodAffinityTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		aff, _ := podAffinityOf(p)
		aff.PreferredDuringSchedulingIgnoredDuringExecution = terms
	}
}

func withPreferredPodAntiAffinity(terms ...corev1.WeightedPodAffinityTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		_, anti := podAffinityOf(p)
		anti.PreferredDuringSchedulingIgnoredDuringExecution = terms
	}
}

// affinityNodes are two nodes in zone a, one each in zones b and c, and one
// without any topology label.
func affinityNodes() []*corev1.Node {
	return []*corev1.Node{zonedNode("a1", "a"), zonedNode("a2", "a"), zonedNode("b1", "b"), zonedNode("c1", "c"), testNode("bare")}
}

func TestInterPodAffinityFilter(t *testing.T) {
	const (
		noAffinity = "node(s) didn't match pod affinity rules"
		noAnti     = "node(s) didn't match pod anti-affinity rules"
		repelled   = "node(s) didn't satisfy existing pods anti-affinity rules"
	)
	// unfit lists the reason for each of the nodes named.
	unfit := func(reason string, nodes ...string) map[string][]string {
		m := map[string][]string{}
		for _, n := range nodes {
			m[n] = []string{reason}
		}
		return m
	}
	nearWeb := withPodAffinity(podTerm(zoneKey, "app", "web"))
	awayFromWeb := withPodAntiAffinity(podTerm(zoneKey, "app", "web"))
	// guard repels web pods from its zone.
	guard := func(opts ...func(*corev1.Pod)) *corev1.Pod {
		return appPod("guard", "guard", append([]func(*corev1.Pod){awayFromWeb}, opts...)...)
	}
	tests := []struct {
		name   string
		placed map[string][]*corev1.Pod // by node name
		pod    *corev1.Pod
		want   map[string][]string // unfit nodes' reasons
	}{
		{
			name: "no affinity: every node fits",
			placed: map[string][]*corev1.Pod{
				"a1": {appPod("web-1", "web")},
			},
			pod:  appPod("p", "api"),
			want: map[string][]string{},
		},

		// The pod's required affinity.
		{
			name:   "affinity: nodes in the zone of a matching pod fit",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}, "b1": {appPod("db-1", "db")}},
			pod:    appPod("p", "api", nearWeb),
			want:   unfit(noAffinity, "b1", "c1", "bare"),
		},
		{
			name:   "affinity over hostnames: only the matching pod's node fits",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}},
			pod:    appPod("p", "api", withPodAffinity(podTerm(hostKey, "app", "web"))),
			want:   unfit(noAffinity, "a2", "b1", "c1", "bare"),
		},
		{
			name:   "affinity: no pod matches and the pod does not match itself: no node fits",
			placed: map[string][]*corev1.Pod{"a1": {appPod("db-1", "db")}},
			pod:    appPod("p", "api", nearWeb),
			want:   unfit(noAffinity, "a1", "a2", "b1", "c1", "bare"),
		},
		{
			name:   "affinity: the first pod of a group matching its own selector goes to any node with the label",
			placed: map[string][]*corev1.Pod{"a1": {appPod("db-1", "db")}},
			pod:    appPod("p", "web", nearWeb),
			want:   unfit(noAffinity, "bare"),
		},
		{
			name:   "affinity: once a pod of the group is placed, the rest follow it",
			placed: map[string][]*corev1.Pod{"b1": {appPod("web-1", "web")}},
			pod:    appPod("p", "web", nearWeb),
			want:   unfit(noAffinity, "a1", "a2", "c1", "bare"),
		},
		{
			name: "affinity: the first-pod exception needs the pod to match every term",
			pod:  appPod("p", "web", withPodAffinity(podTerm(zoneKey, "app", "web"), podTerm(zoneKey, "app", "cache"))),
			want: unfit(noAffinity, "a1", "a2", "b1", "c1", "bare"),
		},
		{
			name: "affinity: every term must be satisfied",
			placed: map[string][]*corev1.Pod{
				"a1": {appPod("web-1", "web")},
				"b1": {appPod("web-2", "web"), appPod("db-1", "db")},
				"c1": {appPod("db-2", "db")},
			},
			pod:  appPod("p", "api", withPodAffinity(podTerm(zoneKey, "app", "web"), podTerm(zoneKey, "app", "db"))),
			want: unfit(noAffinity, "a1", "a2", "c1", "bare"),
		},
		{
			name:   "affinity: by default only pods in the pod's own namespace match",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", inNamespace("other"))}},
			pod:    appPod("p", "api", nearWeb),
			want:   unfit(noAffinity, "a1", "a2", "b1", "c1", "bare"),
		},
		{
			name:   "affinity: term.namespaces lists where to look",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", inNamespace("other"))}},
			pod:    appPod("p", "api", withPodAffinity(inNamespaces(podTerm(zoneKey, "app", "web"), "other"))),
			want:   unfit(noAffinity, "b1", "c1", "bare"),
		},
		{
			name:   "affinity: term.namespaces without the pod's own namespace does not look there",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}},
			pod:    appPod("p", "api", withPodAffinity(inNamespaces(podTerm(zoneKey, "app", "web"), "other"))),
			want:   unfit(noAffinity, "a1", "a2", "b1", "c1", "bare"),
		},
		{
			name:   "affinity: an empty namespaceSelector means every namespace",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", inNamespace("other"))}},
			pod:    appPod("p", "api", withPodAffinity(withNamespaceSelector(podTerm(zoneKey, "app", "web"), &metav1.LabelSelector{}))),
			want:   unfit(noAffinity, "b1", "c1", "bare"),
		},
		{
			name: "affinity: a namespaceSelector with labels is read as the pod's own namespace",
			placed: map[string][]*corev1.Pod{
				"a1": {appPod("web-1", "web", inNamespace("other"))},
				"b1": {appPod("web-2", "web")},
			},
			pod: appPod("p", "api", withPodAffinity(withNamespaceSelector(podTerm(zoneKey, "app", "web"),
				&metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}))),
			want: unfit(noAffinity, "a1", "a2", "c1", "bare"),
		},

		// The pod's required anti-affinity.
		{
			name:   "anti-affinity: the zone of a matching pod is unfit, other zones and unlabelled nodes fit",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}, "b1": {appPod("db-1", "db")}},
			pod:    appPod("p", "api", awayFromWeb),
			want:   unfit(noAnti, "a1", "a2"),
		},
		{
			name:   "anti-affinity over hostnames: only the matching pod's node is unfit",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web")}},
			pod:    appPod("p", "api", withPodAntiAffinity(podTerm(hostKey, "app", "web"))),
			want:   unfit(noAnti, "a1"),
		},
		{
			name:   "anti-affinity: a pod matching its own selector is not repelled by itself",
			placed: map[string][]*corev1.Pod{"a1": {appPod("db-1", "db")}},
			pod:    appPod("p", "web", awayFromWeb),
			want:   map[string][]string{},
		},
		{
			name:   "anti-affinity: by default pods in other namespaces do not repel",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", inNamespace("other"))}},
			pod:    appPod("p", "api", awayFromWeb),
			want:   map[string][]string{},
		},
		{
			name:   "anti-affinity: term.namespaces lists where to look",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", inNamespace("other"))}, "b1": {appPod("web-2", "web")}},
			pod:    appPod("p", "api", withPodAntiAffinity(inNamespaces(podTerm(zoneKey, "app", "web"), "other"))),
			want:   unfit(noAnti, "a1", "a2"),
		},
		{
			name:   "anti-affinity: an empty namespaceSelector means every namespace",
			placed: map[string][]*corev1.Pod{"a1": {appPod("web-1", "web", inNamespace("other"))}},
			pod:    appPod("p", "api", withPodAntiAffinity(withNamespaceSelector(podTerm(zoneKey, "app", "web"), &metav1.LabelSelector{}))),
			want:   unfit(noAnti, "a1", "a2"),
		},

		// The required anti-affinity of placed pods.
		{
			name:   "existing anti-affinity: a placed pod repels a pod it selects from its zone",
			placed: map[string][]*corev1.Pod{"b1": {guard()}},
			pod:    appPod("p", "web"),
			want:   unfit(repelled, "b1"),
		},
		{
			name:   "existing anti-affinity over hostnames repels from that node only",
			placed: map[string][]*corev1.Pod{"a1": {appPod("guard", "guard", withPodAntiAffinity(podTerm(hostKey, "app", "web")))}},
			pod:    appPod("p", "web"),
			want:   unfit(repelled, "a1"),
		},
		{
			name:   "existing anti-affinity: a pod the placed pod does not select may go anywhere",
			placed: map[string][]*corev1.Pod{"b1": {guard()}},
			pod:    appPod("p", "api"),
			want:   map[string][]string{},
		},
		{
			name:   "existing anti-affinity: by default it selects in the placed pod's namespace",
			placed: map[string][]*corev1.Pod{"b1": {guard(inNamespace("other"))}},
			pod:    appPod("p", "web"),
			want:   map[string][]string{},
		},
		{
			name: "existing anti-affinity: the placed pod's term.namespaces",
			placed: map[string][]*corev1.Pod{"b1": {appPod("guard", "guard", inNamespace("other"),
				withPodAntiAffinity(inNamespaces(podTerm(zoneKey, "app", "web"), "default")))}},
			pod:  appPod("p", "web"),
			want: unfit(repelled, "b1"),
		},
		{
			name:   "existing anti-affinity: a placed pod on a node without the topology label repels nobody",
			placed: map[string][]*corev1.Pod{"bare": {guard()}},
			pod:    appPod("p", "web"),
			want:   map[string][]string{},
		},
		{
			name: "the pod's affinity is checked before placed pods' anti-affinity",
			placed: map[string][]*corev1.Pod{
				"a1": {appPod("guard", "guard", withPodAntiAffinity(podTerm(zoneKey, "app", "api")))},
				"b1": {appPod("web-1", "web")},
			},
			pod:  appPod("p", "api", nearWeb),
			want: unfit(noAffinity, "a1", "a2", "c1", "bare"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCycleFilter(InterPodAffinity{}, tt.pod, cluster(affinityNodes(), tt.placed))
			if !maps.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("unfit nodes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInterPodAffinityScore(t *testing.T) {
	// Zone a holds one web pod, zone b two, zone c a db pod.
	placed := map[string][]*corev1.Pod{
		"a1": {appPod("web-1", "web")},
		"b1": {appPod("web-2", "web"), appPod("web-3", "web")},
		"c1": {appPod("db-1", "db"), appPod("web-4", "web", inNamespace("other"))},
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		raw        []int64 // a1, a2, b1, c1, bare
		normalized []int64
	}{
		{
			name:       "no preferences: every node scores 0",
			pod:        appPod("p", "api"),
			raw:        []int64{0, 0, 0, 0, 0},
			normalized: []int64{0, 0, 0, 0, 0},
		},
		{
			name:       "preferred affinity: the weight counts once per matching pod in the zone",
			pod:        appPod("p", "api", withPreferredPodAffinity(weighted(10, podTerm(zoneKey, "app", "web")))),
			raw:        []int64{10, 10, 20, 0, 0},
			normalized: []int64{50, 50, 100, 0, 0},
		},
		{
			name:       "preferred affinity over hostnames",
			pod:        appPod("p", "api", withPreferredPodAffinity(weighted(5, podTerm(hostKey, "app", "web")))),
			raw:        []int64{5, 0, 10, 0, 0},
			normalized: []int64{50, 0, 100, 0, 0},
		},
		{
			name:       "preferred anti-affinity weighs negative",
			pod:        appPod("p", "api", withPreferredPodAntiAffinity(weighted(10, podTerm(zoneKey, "app", "web")))),
			raw:        []int64{-10, -10, -20, 0, 0},
			normalized: []int64{50, 50, 0, 100, 100},
		},
		{
			name: "affinity and anti-affinity add up, then min-max normalize",
			pod: appPod("p", "api",
				withPreferredPodAffinity(weighted(10, podTerm(zoneKey, "app", "web"))),
				withPreferredPodAntiAffinity(weighted(30, podTerm(zoneKey, "app", "db")))),
			raw:        []int64{10, 10, 20, -30, 0},
			normalized: []int64{80, 80, 100, 0, 60},
		},
		{
			name:       "preferred terms see other namespaces only when asked",
			pod:        appPod("p", "api", withPreferredPodAffinity(weighted(10, inNamespaces(podTerm(zoneKey, "app", "web"), "other")))),
			raw:        []int64{0, 0, 0, 10, 0},
			normalized: []int64{0, 0, 0, 100, 0},
		},
		{
			name:       "a preferred term nothing matches",
			pod:        appPod("p", "api", withPreferredPodAffinity(weighted(10, podTerm(zoneKey, "app", "cache")))),
			raw:        []int64{0, 0, 0, 0, 0},
			normalized: []int64{0, 0, 0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, normalized := runCycleScores(t, InterPodAffinity{}, tt.pod, cluster(affinityNodes(), placed))
			if !slices.Equal(raw, tt.raw) {
				t.Errorf("scores = %v, want %v", raw, tt.raw)
			}
			if !slices.Equal(normalized, tt.normalized) {
				t.Errorf("normalized scores = %v, want %v", normalized, tt.normalized)
			}
		})
	}
}
