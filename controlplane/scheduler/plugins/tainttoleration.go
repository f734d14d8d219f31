package plugins

import (
	"context"
	"fmt"
	"sync"

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

// Filter runs for every node a pod might go to, most of them tainted when
// much of a cluster is not ready: it allocates nothing but the verdict,
// and each taint's reason is made once.
func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	for i := range ni.Node.Spec.Taints {
		t := &ni.Node.Spec.Taints[i]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) &&
			!v1helper.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, t, false) {
			return framework.Unfit(untoleratedReason(t))
		}
	}
	return nil
}

// untoleratedReasons holds the reason for each taint seen, by key then
// value (two levels, so that a lookup builds no string).
var untoleratedReasons = struct {
	sync.RWMutex
	m map[string]map[string]string
}{m: map[string]map[string]string{}}

func untoleratedReason(t *corev1.Taint) string {
	untoleratedReasons.RLock()
	r, ok := untoleratedReasons.m[t.Key][t.Value]
	untoleratedReasons.RUnlock()
	if ok {
		return r
	}
	r = fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
	untoleratedReasons.Lock()
	defer untoleratedReasons.Unlock()
	if untoleratedReasons.m[t.Key] == nil {
		untoleratedReasons.m[t.Key] = map[string]string{}
	}
	untoleratedReasons.m[t.Key][t.Value] = r
	return r
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
