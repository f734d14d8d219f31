package plugins

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

func testTaint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

func tolerateEqual(key, value string, effect corev1.TaintEffect) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect}
}

func tolerateExists(key string, effect corev1.TaintEffect) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
}

func TestTaintTolerationFilter(t *testing.T) {
	gpuNoSchedule := testTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	tests := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        []string
	}{
		{name: "untainted node fits"},
		{
			name:   "untolerated NoSchedule",
			taints: []corev1.Taint{gpuNoSchedule},
			want:   []string{"node(s) had untolerated taint {dedicated: gpu}"},
		},
		{
			name:   "untolerated NoExecute",
			taints: []corev1.Taint{testTaint("maintenance", "true", corev1.TaintEffectNoExecute)},
			want:   []string{"node(s) had untolerated taint {maintenance: true}"},
		},
		{
			name:   "a taint without a value",
			taints: []corev1.Taint{testTaint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoExecute)},
			want:   []string{"node(s) had untolerated taint {node.kubernetes.io/not-ready: }"},
		},
		{
			name:   "PreferNoSchedule is left to the score",
			taints: []corev1.Taint{testTaint("spot", "true", corev1.TaintEffectPreferNoSchedule)},
		},
		{
			name:   "only the first untolerated taint is named",
			taints: []corev1.Taint{testTaint("spot", "true", corev1.TaintEffectPreferNoSchedule), gpuNoSchedule, testTaint("b", "2", corev1.TaintEffectNoSchedule)},
			want:   []string{"node(s) had untolerated taint {dedicated: gpu}"},
		},
		{
			name:        "tolerated by key, value and effect",
			taints:      []corev1.Taint{gpuNoSchedule},
			tolerations: []corev1.Toleration{tolerateEqual("dedicated", "gpu", corev1.TaintEffectNoSchedule)},
		},
		{
			name:        "a toleration with another value",
			taints:      []corev1.Taint{gpuNoSchedule},
			tolerations: []corev1.Toleration{tolerateEqual("dedicated", "db", corev1.TaintEffectNoSchedule)},
			want:        []string{"node(s) had untolerated taint {dedicated: gpu}"},
		},
		{
			name:        "a toleration for another effect",
			taints:      []corev1.Taint{gpuNoSchedule},
			tolerations: []corev1.Toleration{tolerateEqual("dedicated", "gpu", corev1.TaintEffectNoExecute)},
			want:        []string{"node(s) had untolerated taint {dedicated: gpu}"},
		},
		{
			name:        "Exists tolerates any value of the key",
			taints:      []corev1.Taint{gpuNoSchedule},
			tolerations: []corev1.Toleration{tolerateExists("dedicated", corev1.TaintEffectNoSchedule)},
		},
		{
			name:        "one of two taints tolerated",
			taints:      []corev1.Taint{gpuNoSchedule, testTaint("maintenance", "true", corev1.TaintEffectNoExecute)},
			tolerations: []corev1.Toleration{tolerateExists("dedicated", "")},
			want:        []string{"node(s) had untolerated taint {maintenance: true}"},
		},
		{
			name:        "an empty-key Exists toleration tolerates every taint",
			taints:      []corev1.Taint{gpuNoSchedule, testTaint("maintenance", "true", corev1.TaintEffectNoExecute)},
			tolerations: []corev1.Toleration{tolerateExists("", "")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", nil, withTolerations(tt.tolerations...))
			ni := testNodeInfo(testNode("n", withTaints(tt.taints...)))
			if got := runFilter(TaintToleration{}, pod, ni); !slices.Equal(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	soft := func(key string) corev1.Taint { return testTaint(key, "true", corev1.TaintEffectPreferNoSchedule) }
	nodes := []*framework.NodeInfo{
		testNodeInfo(testNode("clean")),
		testNodeInfo(testNode("one-soft", withTaints(soft("a")))),
		testNodeInfo(testNode("two-soft", withTaints(soft("a"), soft("b")))),
		testNodeInfo(testNode("hard", withTaints(testTaint("c", "true", corev1.TaintEffectNoSchedule)))),
	}
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		raw         []int64 // untolerated PreferNoSchedule taints, node by node
		normalized  []int64
	}{
		{
			name:       "fewer untolerated soft taints score higher; hard taints do not count",
			raw:        []int64{0, 1, 2, 0},
			normalized: []int64{100, 50, 0, 100},
		},
		{
			name:        "tolerated soft taints do not count",
			tolerations: []corev1.Toleration{tolerateEqual("a", "true", corev1.TaintEffectPreferNoSchedule)},
			raw:         []int64{0, 0, 1, 0},
			normalized:  []int64{100, 100, 0, 100},
		},
		{
			name:        "a toleration for another effect does not tolerate a soft taint",
			tolerations: []corev1.Toleration{tolerateExists("a", corev1.TaintEffectNoSchedule)},
			raw:         []int64{0, 1, 2, 0},
			normalized:  []int64{100, 50, 0, 100},
		},
		{
			name:        "everything tolerated: every node scores max",
			tolerations: []corev1.Toleration{tolerateExists("", "")},
			raw:         []int64{0, 0, 0, 0},
			normalized:  []int64{100, 100, 100, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", nil, withTolerations(tt.tolerations...))
			raw := make([]int64, len(nodes))
			for i, ni := range nodes {
				raw[i] = TaintToleration{}.Score(context.Background(), framework.NewCycleState(), pod, ni)
			}
			if !slices.Equal(raw, tt.raw) {
				t.Errorf("scores = %v, want %v", raw, tt.raw)
			}
			if got := runScores(TaintToleration{}, pod, nodes...); !slices.Equal(got, tt.normalized) {
				t.Errorf("normalized scores = %v, want %v", got, tt.normalized)
			}
		})
	}
}
