package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// Profile is the set of plugins one scheduling decision runs, with the
// weight of each score plugin.
type Profile struct {
	PreFilters []framework.PreFilterPlugin
	Filters    []framework.FilterPlugin
	Scores     []WeightedScore
	// PercentageOfNodesToScore bounds how many feasible nodes are looked
	// for in large clusters; 0 picks it from the cluster size as
	// kube-scheduler does.
	PercentageOfNodesToScore int
}

// WeightedScore is a score plugin and its weight.
type WeightedScore struct {
	Plugin framework.ScorePlugin
	Weight int64
}

// FitError says why no node fits, counting each reason across nodes.
type FitError struct {
	NumAllNodes int
	Reasons     map[string]int
}

// Error is kube-scheduler's message: "0/3 nodes are available: 1
// Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}."
func (e *FitError) Error() string {
	parts := make([]string, 0, len(e.Reasons))
	for reason, n := range e.Reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return fmt.Sprintf("0/%d nodes are available.", e.NumAllNodes)
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", e.NumAllNodes, strings.Join(parts, ", "))
}

// numFeasibleNodesToFind is how many feasible nodes a decision looks for:
// all of them below 100 nodes; otherwise a percentage that falls from 50%
// as the cluster grows (at least 5%, at least 100 nodes).
func numFeasibleNodesToFind(all, percentage int) int {
	const minFeasible, minPercentage = 100, 5
	if all < minFeasible {
		return all
	}
	if percentage <= 0 {
		percentage = max(50-all/125, minPercentage)
	}
	if percentage >= 100 {
		return all
	}
	return max(all*percentage/100, minFeasible)
}

// decider runs a profile over the nodes. It remembers where the last
// search stopped so that successive pods start at different nodes.
type decider struct {
	profile   Profile
	nextStart int
}

// decide picks a node for pod among nodes, or returns a *FitError.
func (d *decider) decide(ctx context.Context, pod *corev1.Pod, nodes []*framework.NodeInfo) (string, error) {
	if len(nodes) == 0 {
		return "", &FitError{Reasons: map[string]int{}}
	}
	state := framework.NewCycleState()
	for _, p := range d.profile.PreFilters {
		if st := p.PreFilter(ctx, state, pod, nodes); st != nil {
			fe := &FitError{NumAllNodes: len(nodes), Reasons: map[string]int{}}
			for _, r := range st.Reasons {
				fe.Reasons[r] = len(nodes)
			}
			return "", fe
		}
	}
	feasible, fe := d.filter(ctx, state, pod, nodes)
	if len(feasible) == 0 {
		return "", fe
	}
	return d.pickBest(ctx, state, pod, feasible), nil
}

func (d *decider) filter(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) ([]*framework.NodeInfo, *FitError) {
	want := numFeasibleNodesToFind(len(nodes), d.profile.PercentageOfNodesToScore)
	fe := &FitError{NumAllNodes: len(nodes), Reasons: map[string]int{}}
	feasible := make([]*framework.NodeInfo, 0, want)
	start, checked := d.nextStart%len(nodes), 0
	for ; checked < len(nodes) && len(feasible) < want; checked++ {
		ni := nodes[(start+checked)%len(nodes)]
		if st := d.runFilters(ctx, state, pod, ni); st != nil {
			for _, r := range st.Reasons {
				fe.Reasons[r]++
			}
			continue
		}
		feasible = append(feasible, ni)
	}
	d.nextStart = (start + checked) % len(nodes)
	return feasible, fe
}

func (d *decider) runFilters(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	for _, f := range d.profile.Filters {
		if st := f.Filter(ctx, state, pod, ni); st != nil {
			st.Plugin = f.Name()
			return st
		}
	}
	return nil
}

// pickBest scores the feasible nodes and returns a best one, choosing at
// random among ties.
func (d *decider) pickBest(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, feasible []*framework.NodeInfo) string {
	if len(feasible) == 1 {
		return feasible[0].Node.Name
	}
	totals := make([]int64, len(feasible))
	scores := make([]int64, len(feasible))
	for _, ws := range d.profile.Scores {
		for i, ni := range feasible {
			scores[i] = ws.Plugin.Score(ctx, state, pod, ni)
		}
		if n, ok := ws.Plugin.(framework.ScoreNormalizer); ok {
			n.NormalizeScores(scores)
		}
		for i := range scores {
			totals[i] += scores[i] * ws.Weight
		}
	}
	best, ties := 0, 1
	for i := 1; i < len(totals); i++ {
		switch {
		case totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rand.N(ties) == 0 {
				best = i
			}
		}
	}
	return feasible[best].Node.Name
}
