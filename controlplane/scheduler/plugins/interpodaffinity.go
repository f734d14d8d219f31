package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

const interPodAffinityKey = "InterPodAffinity/state"

// InterPodAffinity keeps pods with required affinity near the pods they
// ask for and pods with required anti-affinity away from them, honours the
// anti-affinity of pods already placed, and scores preferred terms.
type InterPodAffinity struct{}

var (
	_ framework.PreFilterPlugin = InterPodAffinity{}
	_ framework.FilterPlugin    = InterPodAffinity{}
	_ framework.ScorePlugin     = InterPodAffinity{}
	_ framework.ScoreNormalizer = InterPodAffinity{}
)

func (InterPodAffinity) Name() string { return "InterPodAffinity" }

// topologySet is the topology domains ("key=value") holding matching pods.
type topologySet = sets.Set[string]

type affinityState struct {
	affinity     []corev1.PodAffinityTerm
	affinityIn   []topologySet // per affinity term
	anyMatch     bool          // some pod matches some affinity term
	selfMatch    bool          // the pod matches all its own affinity terms
	anti         []corev1.PodAffinityTerm
	antiIn       []topologySet // per anti-affinity term
	existingAnti topologySet   // domains where placed pods repel this one
	preferred    map[string]int64
}

func (InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	st := &affinityState{existingAnti: topologySet{}, preferred: map[string]int64{}}
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		st.affinity = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		st.anti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	preferredDomains(pod, nodes, st.preferred)
	st.affinityIn = domainsWith(pod, st.affinity, nodes)
	st.antiIn = domainsWith(pod, st.anti, nodes)
	st.selfMatch = true
	for i, term := range st.affinity {
		st.anyMatch = st.anyMatch || st.affinityIn[i].Len() > 0
		st.selfMatch = st.selfMatch && affinityMatcher(pod, &term).matches(pod)
	}
	for _, ni := range nodes {
		if len(ni.AntiAffinityPods) == 0 {
			continue
		}
		for _, placed := range ni.AntiAffinityPods {
			for _, term := range placed.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if v, ok := topologyValue(ni.Node, term.TopologyKey); ok && affinityMatcher(placed, &term).matches(pod) {
					st.existingAnti.Insert(term.TopologyKey + "=" + v)
				}
			}
		}
	}
	state.Write(interPodAffinityKey, st)
	return nil
}

// domainsWith returns, per term, the domains of the nodes running a pod
// the term selects.
func domainsWith(pod *corev1.Pod, terms []corev1.PodAffinityTerm, nodes []*framework.NodeInfo) []topologySet {
	out := make([]topologySet, len(terms))
	for i := range terms {
		out[i] = topologySet{}
		m := affinityMatcher(pod, &terms[i])
		for _, ni := range nodes {
			v, ok := topologyValue(ni.Node, terms[i].TopologyKey)
			if !ok || out[i].Has(terms[i].TopologyKey+"="+v) {
				continue
			}
			if countMatching(ni, m.matches) > 0 {
				out[i].Insert(terms[i].TopologyKey + "=" + v)
			}
		}
	}
	return out
}

// preferredDomains sums, per domain, the weights of the pod's preferred
// terms for each matching pod there (anti-affinity counts negative).
func preferredDomains(pod *corev1.Pod, nodes []*framework.NodeInfo, into map[string]int64) {
	a := pod.Spec.Affinity
	if a == nil {
		return
	}
	var terms []corev1.WeightedPodAffinityTerm
	var signs []int64
	if a.PodAffinity != nil {
		for _, t := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms, signs = append(terms, t), append(signs, 1)
		}
	}
	if a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms, signs = append(terms, t), append(signs, -1)
		}
	}
	for i, t := range terms {
		m := affinityMatcher(pod, &t.PodAffinityTerm)
		for _, ni := range nodes {
			v, ok := topologyValue(ni.Node, t.PodAffinityTerm.TopologyKey)
			if !ok {
				continue
			}
			into[t.PodAffinityTerm.TopologyKey+"="+v] += signs[i] * int64(t.Weight) * int64(countMatching(ni, m.matches))
		}
	}
}

func readAffinity(state *framework.CycleState) *affinityState {
	return readState[*affinityState](state, interPodAffinityKey)
}

// Filter checks, in kube-scheduler's order, the pod's required affinity,
// its required anti-affinity, then the anti-affinity of placed pods.
func (InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	st := readAffinity(state)
	if st == nil {
		return nil
	}
	for i, term := range st.affinity {
		v, ok := topologyValue(ni.Node, term.TopologyKey)
		// The first pod of a group that selects itself may go anywhere.
		if !ok || (!st.affinityIn[i].Has(term.TopologyKey+"="+v) && (st.anyMatch || !st.selfMatch)) {
			return framework.Unfit("node(s) didn't match pod affinity rules")
		}
	}
	for i, term := range st.anti {
		if v, ok := topologyValue(ni.Node, term.TopologyKey); ok && st.antiIn[i].Has(term.TopologyKey+"="+v) {
			return framework.Unfit("node(s) didn't match pod anti-affinity rules")
		}
	}
	for key := range st.existingAnti {
		if inDomain(ni, key) {
			return framework.Unfit("node(s) didn't satisfy existing pods anti-affinity rules")
		}
	}
	return nil
}

// inDomain reports whether the node is in domain ("key=value").
func inDomain(ni *framework.NodeInfo, domain string) bool {
	k, v := splitDomain(domain)
	got, ok := ni.Node.Labels[k]
	return ok && got == v
}

func splitDomain(d string) (key, value string) {
	for i := 0; i < len(d); i++ {
		if d[i] == '=' {
			return d[:i], d[i+1:]
		}
	}
	return d, ""
}

func (InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) int64 {
	st := readAffinity(state)
	if st == nil {
		return 0
	}
	var total int64
	for domain, w := range st.preferred {
		if inDomain(ni, domain) {
			total += w
		}
	}
	return total
}

func (InterPodAffinity) NormalizeScores(scores []int64) { normalizeMinMax(scores) }

// normalizeMinMax maps the lowest score to 0 and the highest to 100.
func normalizeMinMax(scores []int64) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0], scores[0]
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	for i, s := range scores {
		if hi == lo {
			scores[i] = 0
			continue
		}
		scores[i] = (s - lo) * framework.MaxNodeScore / (hi - lo)
	}
}
