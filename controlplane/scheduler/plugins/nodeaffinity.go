package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// NodeAffinity filters on the pod's nodeSelector and required node
// affinity (every operator, label and field terms), and scores the sum of
// the weights of the preferred terms a node matches.
type NodeAffinity struct{}

var (
	_ framework.FilterPlugin    = NodeAffinity{}
	_ framework.ScorePlugin     = NodeAffinity{}
	_ framework.ScoreNormalizer = NodeAffinity{}
)

func (NodeAffinity) Name() string { return "NodeAffinity" }

func (NodeAffinity) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(ni.Node); ok {
		return nil
	}
	return framework.Unfit("node(s) didn't match Pod's node affinity/selector")
}

func (NodeAffinity) Score(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return 0
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return 0
	}
	return terms.Score(ni.Node)
}

func (NodeAffinity) NormalizeScores(scores []int64) { framework.NormalizeToMax(scores, false) }
