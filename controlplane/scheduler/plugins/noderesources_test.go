package plugins

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

func TestNodeResourcesFitFilter(t *testing.T) {
	// node has 4 cpu, 8Gi, 20Gi of ephemeral storage, 2 GPUs and room for
	// 110 pods; busy takes 3 cpu, 6Gi, 15Gi and 1 GPU of it, leaving 1 cpu,
	// 2Gi, 5Gi and 1 GPU.
	node := testNode("n", withAllocatable(resList("cpu=4", "memory=8Gi", "ephemeral-storage=20Gi", "example.com/gpu=2", "pods=110")))
	busy := testPod("busy", resList("cpu=3", "memory=6Gi", "ephemeral-storage=15Gi", "example.com/gpu=1"))
	onePod := testNode("one-pod", withAllocatable(resList("cpu=4", "memory=8Gi", "pods=1")))
	tests := []struct {
		name     string
		node     *corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     []string
	}{
		{
			name: "exactly what is left fits", node: node, existing: []*corev1.Pod{busy},
			pod: testPod("p", resList("cpu=1", "memory=2Gi", "ephemeral-storage=5Gi", "example.com/gpu=1")),
		},
		{
			name: "cpu", node: node, existing: []*corev1.Pod{busy},
			pod:  testPod("p", resList("cpu=1001m")),
			want: []string{"Insufficient cpu"},
		},
		{
			name: "memory", node: node, existing: []*corev1.Pod{busy},
			pod:  testPod("p", resList("memory=2049Mi")),
			want: []string{"Insufficient memory"},
		},
		{
			name: "ephemeral storage", node: node, existing: []*corev1.Pod{busy},
			pod:  testPod("p", resList("ephemeral-storage=6Gi")),
			want: []string{"Insufficient ephemeral-storage"},
		},
		{
			name: "extended resource", node: node, existing: []*corev1.Pod{busy},
			pod:  testPod("p", resList("example.com/gpu=2")),
			want: []string{"Insufficient example.com/gpu"},
		},
		{
			name: "extended resource the node lacks", node: node,
			pod:  testPod("p", resList("example.com/fpga=1")),
			want: []string{"Insufficient example.com/fpga"},
		},
		{
			name: "several at once, pods first", node: onePod, existing: []*corev1.Pod{testPod("other", resList("cpu=3", "memory=7Gi"))},
			pod:  testPod("p", resList("cpu=2", "memory=2Gi")),
			want: []string{"Too many pods", "Insufficient cpu", "Insufficient memory"},
		},
		{
			name: "too many pods holds for a pod with no requests", node: onePod, existing: []*corev1.Pod{testPod("other", nil)},
			pod:  testPod("p", nil),
			want: []string{"Too many pods"},
		},
		{
			name: "a pod with no requests fits an overcommitted node",
			node: testNode("n", withAllocatable(resList("cpu=1", "memory=1Gi", "pods=110"))),
			// Requests above allocatable, as after the node shrank.
			existing: []*corev1.Pod{testPod("big", resList("cpu=2", "memory=2Gi"))},
			pod:      testPod("p", nil),
		},
		{
			name: "only the largest init container counts against the containers", node: node, existing: []*corev1.Pod{busy},
			pod: testPod("p", resList("cpu=500m"), withInitContainers(
				testContainer(resList("cpu=1")), testContainer(resList("cpu=1")))),
		},
		{
			name: "an init container larger than what is left", node: node, existing: []*corev1.Pod{busy},
			pod:  testPod("p", resList("cpu=500m"), withInitContainers(testContainer(resList("cpu=1500m")))),
			want: []string{"Insufficient cpu"},
		},
		{
			name: "containers are summed", node: node, existing: []*corev1.Pod{busy},
			pod: testPod("p", nil, withContainers(testContainer(resList("cpu=600m")), testContainer(resList("cpu=600m"))),
				withInitContainers(testContainer(resList("cpu=500m")))),
			want: []string{"Insufficient cpu"},
		},
		{
			name: "a sidecar runs beside the containers", node: node, existing: []*corev1.Pod{busy},
			pod: testPod("p", resList("cpu=500m"), withInitContainers(func() corev1.Container {
				c := testContainer(resList("cpu=600m"))
				always := corev1.ContainerRestartPolicyAlways
				c.RestartPolicy = &always
				return c
			}())),
			want: []string{"Insufficient cpu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := testNodeInfo(tt.node, tt.existing...)
			if got := runFilter(NodeResourcesFit{}, tt.pod, ni); !slices.Equal(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
		})
	}
}

func score(s framework.ScorePlugin, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	return s.Score(context.Background(), framework.NewCycleState(), pod, ni)
}

func TestNodeResourcesScore(t *testing.T) {
	// All on a 4-cpu, 8Gi node. Each resource scores
	// (free after the pod)*100/allocatable for LeastAllocated and
	// used*100/allocatable for MostAllocated, rounded down; the node
	// scores their mean.
	tests := []struct {
		name             string
		existing         []*corev1.Pod
		pod              *corev1.Pod
		least, mostAlloc int64
	}{
		{
			name:  "a quarter of both on an empty node",
			pod:   testPod("p", resList("cpu=1", "memory=2Gi")),
			least: 75, mostAlloc: 25,
		},
		{
			name:  "cpu and memory score separately",
			pod:   testPod("p", resList("cpu=2", "memory=1Gi")),
			least: (50 + 87) / 2, mostAlloc: (50 + 12) / 2,
		},
		{
			name:     "pods already there count",
			existing: []*corev1.Pod{testPod("old", resList("cpu=2", "memory=4Gi"))},
			pod:      testPod("p", resList("cpu=1", "memory=2Gi")),
			least:    25, mostAlloc: 75,
		},
		{
			name:  "a pod with no requests counts as 100m and 200Mi",
			pod:   testPod("p", nil),
			least: (97 + 97) / 2, mostAlloc: (2 + 2) / 2,
		},
		{
			name:     "pods already there with no requests count as 100m and 200Mi",
			existing: []*corev1.Pod{testPod("old", nil)},
			pod:      testPod("p", resList("cpu=1", "memory=2Gi")),
			// 1100m of 4000m, 2248Mi of 8192Mi.
			least: (72 + 72) / 2, mostAlloc: (27 + 27) / 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := testNodeInfo(testNode("n"), tt.existing...)
			if got := score(NodeResourcesScore{Strategy: LeastAllocated}, tt.pod, ni); got != tt.least {
				t.Errorf("LeastAllocated = %d, want %d", got, tt.least)
			}
			if got := score(NodeResourcesScore{Strategy: MostAllocated}, tt.pod, ni); got != tt.mostAlloc {
				t.Errorf("MostAllocated = %d, want %d", got, tt.mostAlloc)
			}
		})
	}
}

func TestNodeResourcesScoreOvercommitted(t *testing.T) {
	// Nodes with 1 cpu and 2Gi holding request-less pods, which count as
	// 100m and 200Mi each for scoring, and a request-less pod to place.
	idle := func(n int) []*corev1.Pod {
		var pods []*corev1.Pod
		for i := range n {
			pods = append(pods, testPod(fmt.Sprintf("idle-%d", i), nil))
		}
		return pods
	}
	tests := []struct {
		name     string
		strategy ScoringStrategy
		existing []*corev1.Pod
		want     int64
	}{
		{name: "least, half full", strategy: LeastAllocated, existing: idle(5), want: (40 + 41) / 2},      // 600m, 1200Mi
		{name: "least, overcommitted by defaults", strategy: LeastAllocated, existing: idle(10), want: 0}, // 1100m, 2200Mi
		{name: "most, half full", strategy: MostAllocated, existing: idle(5), want: (60 + 58) / 2},
		{name: "most, exactly full", strategy: MostAllocated, existing: idle(9), want: (100 + 97) / 2}, // 1000m, 2000Mi
		{
			name: "most, overcommitted by defaults", strategy: MostAllocated, existing: idle(10), want: 100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := testNodeInfo(testNode("n", withAllocatable(resList("cpu=1", "memory=2Gi", "pods=110"))), tt.existing...)
			if got := score(NodeResourcesScore{Strategy: tt.strategy}, testPod("p", nil), ni); got != tt.want {
				t.Errorf("%s = %d, want %d", tt.strategy, got, tt.want)
			}
		})
	}
}

func TestNodeResourcesBalancedAllocationScore(t *testing.T) {
	// All on a 4-cpu, 8Gi node: 100 * (1 - |cpu fraction - memory fraction| / 2).
	tests := []struct {
		name     string
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     int64
	}{
		{name: "equal fractions", pod: testPod("p", resList("cpu=1", "memory=2Gi")), want: 100},
		{name: "cpu-heavy", pod: testPod("p", resList("cpu=2", "memory=1Gi")), want: 81},    // .5 vs .125
		{name: "memory-heavy", pod: testPod("p", resList("cpu=1", "memory=6Gi")), want: 75}, // .25 vs .75
		{name: "all cpu, no memory", pod: testPod("p", resList("cpu=4")), want: 50},
		{
			name:     "pods already there count",
			existing: []*corev1.Pod{testPod("old", resList("cpu=2"))},
			pod:      testPod("p", resList("memory=4Gi")), // .5 vs .5
			want:     100,
		},
		{
			name:     "fractions stop at 1",
			existing: []*corev1.Pod{testPod("old", resList("cpu=4"))},
			pod:      testPod("p", resList("cpu=2", "memory=8Gi")), // 1.5 counts as 1
			want:     100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := testNodeInfo(testNode("n"), tt.existing...)
			if got := score(NodeResourcesBalancedAllocation{}, tt.pod, ni); got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
		})
	}
}
