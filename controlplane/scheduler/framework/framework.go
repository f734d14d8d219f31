// Package framework holds what the scheduler and its plugins share: the
// per-node view (NodeInfo), the per-cycle state, the plugin interfaces and
// the status a filter returns.
package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// MaxNodeScore is the highest score a score plugin gives (after
// normalization); MinNodeScore the lowest.
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
)

// Status is a filter's verdict on one node. nil means the node fits.
type Status struct {
	// Plugin is the name of the plugin that rejected the node.
	Plugin string
	// Reasons say why, in kube-scheduler's words (counted across nodes in
	// the FailedScheduling message).
	Reasons []string
	// Detail, if any, adds what this node lacks (the requested and free
	// amounts); it is shown per node, never counted.
	Detail string
}

// Unfit returns a rejecting status with reasons.
func Unfit(reasons ...string) *Status { return &Status{Reasons: reasons} }

// CycleState carries data between the plugins of one scheduling cycle
// (computed once per pod, read for every node). A cycle runs in one
// goroutine, so it has no lock.
type CycleState struct {
	data map[string]any
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState { return &CycleState{data: map[string]any{}} }

// Write stores v under key.
func (c *CycleState) Write(key string, v any) { c.data[key] = v }

// Read returns what is stored under key.
func (c *CycleState) Read(key string) (any, bool) {
	v, ok := c.data[key]
	return v, ok
}

// Plugin is anything the framework runs.
type Plugin interface{ Name() string }

// PreFilterPlugin computes, once per pod, what its Filter or Score needs
// for every node. nodes is the whole snapshot. A non-nil status makes the
// pod unschedulable on every node.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *corev1.Pod, nodes []*NodeInfo) *Status
}

// FilterPlugin decides whether pod may run on node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *corev1.Pod, node *NodeInfo) *Status
}

// PreBindPlugin readies what the pod needs on its chosen node before it
// is bound there; an error sends the pod back to the queue.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, pod *corev1.Pod, node string) error
}

// ScorePlugin ranks a feasible node; higher is better.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *corev1.Pod, node *NodeInfo) int64
}

// ScoreNormalizer maps a score plugin's raw scores onto
// [MinNodeScore, MaxNodeScore], in place.
type ScoreNormalizer interface {
	NormalizeScores(scores []int64)
}

// NormalizeToMax scales scores so the highest becomes MaxNodeScore; with
// reverse, the highest becomes MinNodeScore (for "fewer is better" counts).
func NormalizeToMax(scores []int64, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s)
	}
	for i, s := range scores {
		switch {
		case highest == 0 && reverse:
			scores[i] = MaxNodeScore
		case highest == 0:
			scores[i] = MinNodeScore
		case reverse:
			scores[i] = MaxNodeScore - s*MaxNodeScore/highest
		default:
			scores[i] = s * MaxNodeScore / highest
		}
	}
}
