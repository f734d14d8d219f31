package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// TaintToleration rejects nodes with a NoSchedule or NoExecute taint the
// pod does not tolerate, and scores nodes by how few PreferNoSchedule
// taints the pod does not tolerate.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin    = TaintToleration{}
	_ framework.ScorePlugin     = TaintToleration{}
	_ framework.ScoreNormalizer = TaintToleration{}
)

func (TaintToleration) Name() string { return "TaintToleration" }

func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	hard := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	taint, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), ni.Node.Spec.Taints, pod.Spec.Tolerations, hard, false)
	if !untolerated {
		return nil
	}
	return framework.Unfit(fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

func (TaintToleration) Score(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	var count int64
	for i := range ni.Node.Spec.Taints {
		t := &ni.Node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule &&
			!v1helper.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, t, false) {
			count++
		}
	}
	return count
}

func (TaintToleration) NormalizeScores(scores []int64) { framework.NormalizeToMax(scores, true) }
