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
	// ClassFilters judge a node by its class alone (framework.ClassOf):
	// each runs once per class on one of its nodes, and its verdict holds
	// for them all. They run before Filters.
	ClassFilters []framework.FilterPlugin
	Filters      []framework.FilterPlugin
	Scores       []WeightedScore
	PreBinds     []framework.PreBindPlugin
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

// FitError says why no node fits, counting each reason across nodes, or
// what a PreFilter plugin found that rules out every node.
type FitError struct {
	NumAllNodes  int
	Reasons      map[string]int
	PreFilterMsg string
	// Nodes says, for each node a filter rejected, which plugin did and
	// why ("NodeResourcesFit: Insufficient cpu (cpu: requested 6, free
	// 2)"), for --why-not; ByPlugin counts the nodes each plugin rejected.
	Nodes    map[string]string
	ByPlugin map[string]int
}

// reject counts a filter's rejection of the nodes.
func (e *FitError) reject(st *framework.Status, nodes ...*framework.NodeInfo) {
	for _, r := range st.Reasons {
		e.Reasons[r] += len(nodes)
	}
	why := st.Plugin + ": " + strings.Join(st.Reasons, ", ")
	if st.Detail != "" {
		why += " (" + st.Detail + ")"
	}
	if e.Nodes == nil {
		e.Nodes, e.ByPlugin = map[string]string{}, map[string]int{}
	}
	e.ByPlugin[st.Plugin] += len(nodes)
	for _, ni := range nodes {
		e.Nodes[ni.Node.Name] = why
	}
}

// Error is kube-scheduler's message: "0/3 nodes are available: 1
// Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}."
func (e *FitError) Error() string {
	if e.PreFilterMsg != "" {
		return fmt.Sprintf("0/%d nodes are available: %s.", e.NumAllNodes, e.PreFilterMsg)
	}
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
	buf       []*framework.NodeInfo // the candidates of several classes
}

// decision is where a pod goes and how that was decided.
type decision struct {
	node     string
	feasible int            // nodes that passed the filters (of those looked at)
	rejected map[string]int // nodes each filter plugin rejected
	top      []string       // the best nodes with their scores ("node-2=187"), best first
}

// decide picks a node for pod among snap's nodes, or returns a *FitError.
func (d *decider) decide(ctx context.Context, pod *corev1.Pod, snap Snapshot) (decision, error) {
	nodes := snap.Nodes
	if len(nodes) == 0 {
		return decision{}, &FitError{Reasons: map[string]int{}}
	}
	state := framework.NewCycleState()
	for _, p := range d.profile.PreFilters {
		if st := p.PreFilter(ctx, state, pod, nodes); st != nil {
			return decision{}, &FitError{NumAllNodes: len(nodes), Reasons: map[string]int{}, PreFilterMsg: strings.Join(st.Reasons, ", ")}
		}
	}
	fe := &FitError{NumAllNodes: len(nodes), Reasons: map[string]int{}}
	candidates := d.candidates(ctx, state, pod, snap.Classes, fe)
	want := numFeasibleNodesToFind(len(nodes), d.profile.PercentageOfNodesToScore)
	feasible := d.filter(ctx, state, pod, candidates, want, fe)
	if len(feasible) == 0 {
		return decision{}, fe
	}
	dec := d.pickBest(ctx, state, pod, feasible)
	dec.feasible, dec.rejected = len(feasible), fe.ByPlugin
	return dec, nil
}

// candidates returns the nodes of the classes that pass the class
// filters, counting the nodes of the others as rejected in fe.
func (d *decider) candidates(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, classes []*NodeClass, fe *FitError) []*framework.NodeInfo {
	var passed []*NodeClass
	for _, c := range classes {
		if st := runFilters(ctx, state, pod, c.Nodes[0], d.profile.ClassFilters); st != nil {
			fe.reject(st, c.Nodes...)
			continue
		}
		passed = append(passed, c)
	}
	switch len(passed) {
	case 0:
		return nil
	case 1:
		return passed[0].Nodes
	}
	d.buf = d.buf[:0]
	for _, c := range passed {
		d.buf = append(d.buf, c.Nodes...)
	}
	return d.buf
}

// filter returns up to want candidates that pass the filters, counting
// the others' reasons in fe. It starts where the last search stopped.
func (d *decider) filter(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, candidates []*framework.NodeInfo, want int, fe *FitError) []*framework.NodeInfo {
	if len(candidates) == 0 {
		return nil
	}
	feasible := make([]*framework.NodeInfo, 0, min(want, len(candidates)))
	start, checked := d.nextStart%len(candidates), 0
	for ; checked < len(candidates) && len(feasible) < want; checked++ {
		ni := candidates[(start+checked)%len(candidates)]
		if st := runFilters(ctx, state, pod, ni, d.profile.Filters); st != nil {
			fe.reject(st, ni)
			continue
		}
		feasible = append(feasible, ni)
	}
	d.nextStart = (start + checked) % len(candidates)
	return feasible
}

// runFilters runs filters on one node and returns the first rejection.
func runFilters(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo, filters []framework.FilterPlugin) *framework.Status {
	for _, f := range filters {
		if st := f.Filter(ctx, state, pod, ni); st != nil {
			st.Plugin = f.Name()
			return st
		}
	}
	return nil
}

// pickBest scores the feasible nodes and returns a best one, choosing at
// random among ties, with the top scores.
func (d *decider) pickBest(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, feasible []*framework.NodeInfo) decision {
	if len(feasible) == 1 {
		return decision{node: feasible[0].Node.Name}
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
	return decision{node: feasible[best].Node.Name, top: topScores(feasible, totals, best)}
}

// topScores names the chosen node and the two next best with their total
// scores, in one pass (there may be thousands of feasible nodes).
func topScores(feasible []*framework.NodeInfo, totals []int64, best int) []string {
	next := [2]int{-1, -1}
	for i, t := range totals {
		switch {
		case i == best:
		case next[0] < 0 || t > totals[next[0]]:
			next = [2]int{i, next[0]}
		case next[1] < 0 || t > totals[next[1]]:
			next[1] = i
		}
	}
	top := []string{fmt.Sprintf("%s=%d", feasible[best].Node.Name, totals[best])}
	for _, i := range next {
		if i >= 0 {
			top = append(top, fmt.Sprintf("%s=%d", feasible[i].Node.Name, totals[i]))
		}
	}
	return top
}
