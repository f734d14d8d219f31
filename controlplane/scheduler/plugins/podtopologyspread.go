package plugins

import (
	"context"
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

const topologySpreadKey = "PodTopologySpread/state"

// defaultSpread is kube-scheduler's system default: spread pods of one
// owner across hosts (skew 3) and zones (skew 5), as a preference.
var defaultSpread = []corev1.TopologySpreadConstraint{
	{TopologyKey: corev1.LabelHostname, MaxSkew: 3, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 5, WhenUnsatisfiable: corev1.ScheduleAnyway},
}

// PodTopologySpread enforces DoNotSchedule spread constraints (the skew of
// matching pods across a topology's domains stays within maxSkew) and
// scores ScheduleAnyway ones — or, for a pod without constraints, spreads
// the pods of its controller.
type PodTopologySpread struct{}

var (
	_ framework.PreFilterPlugin = PodTopologySpread{}
	_ framework.FilterPlugin    = PodTopologySpread{}
	_ framework.ScorePlugin     = PodTopologySpread{}
	_ framework.ScoreNormalizer = PodTopologySpread{}
)

func (PodTopologySpread) Name() string { return "PodTopologySpread" }

// spreadConstraint is a constraint with its pod counts per domain.
type spreadConstraint struct {
	corev1.TopologySpreadConstraint
	matches  func(*corev1.Pod) bool
	counts   map[string]int // domain value → matching pods
	minCount int
	self     int // 1 if the incoming pod matches its own selector
}

type spreadState struct {
	hard, soft []*spreadConstraint
	// requireAll: a node lacking a soft constraint's key is not scored
	// (the pod's own constraints; the system defaults score what they can).
	requireAll bool
}

// ignored marks a node the score leaves out; it normalizes to 0.
const ignored = -1

func (PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	st := &spreadState{requireAll: len(pod.Spec.TopologySpreadConstraints) > 0}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, c := range pod.Spec.TopologySpreadConstraints {
		sc := newSpreadConstraint(pod, c, selectorMatcher(pod, c.LabelSelector))
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			st.hard = append(st.hard, sc)
		} else {
			st.soft = append(st.soft, sc)
		}
	}
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		if owner := metav1.GetControllerOf(pod); owner != nil {
			for _, c := range defaultSpread {
				st.soft = append(st.soft, newSpreadConstraint(pod, c, sameController(pod, owner)))
			}
		}
	}
	for _, sc := range append(append([]*spreadConstraint{}, st.hard...), st.soft...) {
		sc.count(nodes, affinity)
	}
	state.Write(topologySpreadKey, st)
	return nil
}

func newSpreadConstraint(pod *corev1.Pod, c corev1.TopologySpreadConstraint, matches func(*corev1.Pod) bool) *spreadConstraint {
	sc := &spreadConstraint{TopologySpreadConstraint: c, matches: matches, counts: map[string]int{}}
	if matches(pod) {
		sc.self = 1
	}
	return sc
}

func selectorMatcher(pod *corev1.Pod, ls *metav1.LabelSelector) func(*corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || ls == nil {
		sel = labels.Nothing()
	}
	return func(p *corev1.Pod) bool { return p.Namespace == pod.Namespace && sel.Matches(labels.Set(p.Labels)) }
}

func sameController(pod *corev1.Pod, owner *metav1.OwnerReference) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		o := metav1.GetControllerOf(p)
		return p.Namespace == pod.Namespace && o != nil && o.UID == owner.UID
	}
}

// count tallies matching pods per domain over the nodes the pod could go
// to (those its node affinity accepts) and finds the least-loaded domain.
func (sc *spreadConstraint) count(nodes []*framework.NodeInfo, affinity nodeaffinity.RequiredNodeAffinity) {
	for _, ni := range nodes {
		v, ok := topologyValue(ni.Node, sc.TopologyKey)
		if ok, _ := affinity.Match(ni.Node); !ok {
			continue
		}
		if !ok {
			continue
		}
		sc.counts[v] += countMatching(ni, sc.matches)
	}
	sc.minCount = math.MaxInt
	for _, n := range sc.counts {
		sc.minCount = min(sc.minCount, n)
	}
}

func readSpread(state *framework.CycleState) *spreadState {
	return readState[*spreadState](state, topologySpreadKey)
}

func (PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	st := readSpread(state)
	if st == nil {
		return nil
	}
	for _, sc := range st.hard {
		v, ok := topologyValue(ni.Node, sc.TopologyKey)
		if !ok {
			return framework.Unfit("node(s) didn't match pod topology spread constraints (missing required label)")
		}
		if sc.counts[v]+sc.self-sc.minCount > int(sc.MaxSkew) {
			return framework.Unfit("node(s) didn't match pod topology spread constraints")
		}
	}
	return nil
}

// Score counts the matching pods in the node's domains (fewer is better).
func (PodTopologySpread) Score(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) int64 {
	st := readSpread(state)
	if st == nil {
		return 0
	}
	var total int64
	for _, sc := range st.soft {
		v, ok := topologyValue(ni.Node, sc.TopologyKey)
		switch {
		case ok:
			total += int64(sc.counts[v])
		case st.requireAll:
			return ignored
		}
	}
	return total
}

// NormalizeScores gives the emptiest domains 100 and the fullest 0; nodes
// left out get 0.
func (PodTopologySpread) NormalizeScores(scores []int64) {
	var scored []int64
	for _, s := range scores {
		if s != ignored {
			scored = append(scored, s)
		}
	}
	normalizeMinMax(scored)
	j := 0
	for i, s := range scores {
		if s == ignored {
			scores[i] = framework.MinNodeScore
			continue
		}
		scores[i] = framework.MaxNodeScore - scored[j]
		j++
	}
}
