package plugins

import (
	"context"
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

const (
	podRequestsKey = "NodeResources/requests"
	nonZeroKey     = "NodeResources/nonZeroRequests"
)

// podRequests returns the pod's requests, computed once per cycle.
func podRequests(state *framework.CycleState, pod *corev1.Pod) framework.Resources {
	return cachedResources(state, podRequestsKey, pod, framework.PodRequests)
}

// nonZeroRequests returns the pod's scoring requests, once per cycle.
func nonZeroRequests(state *framework.CycleState, pod *corev1.Pod) framework.Resources {
	return cachedResources(state, nonZeroKey, pod, framework.NonZeroRequests)
}

func cachedResources(state *framework.CycleState, key string, pod *corev1.Pod, compute func(*corev1.Pod) framework.Resources) framework.Resources {
	if v, ok := state.Read(key); ok {
		return v.(framework.Resources)
	}
	r := compute(pod)
	state.Write(key, r)
	return r
}

// NodeResourcesFit rejects nodes without room for the pod's requests: cpu,
// memory, ephemeral-storage, extended resources and the pod count.
type NodeResourcesFit struct{}

var _ framework.FilterPlugin = NodeResourcesFit{}

func (NodeResourcesFit) Name() string { return "NodeResourcesFit" }

func (NodeResourcesFit) Filter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	var reasons, details []string
	if int64(len(ni.Pods))+1 > ni.AllowedPods {
		reasons = append(reasons, "Too many pods")
		details = append(details, fmt.Sprintf("pods: %d of %d", len(ni.Pods), ni.AllowedPods))
	}
	want, alloc, used := podRequests(state, pod), ni.Allocatable, ni.Requested
	check := func(name string, want, free int64, amount func(int64) string) {
		if want > 0 && want > free {
			reasons = append(reasons, "Insufficient "+name)
			details = append(details, fmt.Sprintf("%s: requested %s, free %s", name, amount(want), amount(max(free, 0))))
		}
	}
	check("cpu", want.MilliCPU, alloc.MilliCPU-used.MilliCPU, milliCPU)
	check("memory", want.Memory, alloc.Memory-used.Memory, bytes)
	check("ephemeral-storage", want.EphemeralStorage, alloc.EphemeralStorage-used.EphemeralStorage, bytes)
	for name, v := range want.Scalar {
		check(string(name), v, alloc.Scalar[name]-used.Scalar[name], count)
	}
	if len(reasons) > 0 {
		st := framework.Unfit(reasons...)
		st.Detail = strings.Join(details, "; ")
		return st
	}
	return nil
}

// The amounts a rejection's detail shows, as quantities are written.
func milliCPU(v int64) string { return resource.NewMilliQuantity(v, resource.DecimalSI).String() }
func bytes(v int64) string    { return resource.NewQuantity(v, resource.BinarySI).String() }
func count(v int64) string    { return resource.NewQuantity(v, resource.DecimalSI).String() }

// ScoringStrategy picks how NodeResourcesFit scores.
type ScoringStrategy string

// The strategies kube-scheduler offers for resource scoring.
const (
	LeastAllocated ScoringStrategy = "LeastAllocated"
	MostAllocated  ScoringStrategy = "MostAllocated"
)

// NodeResourcesScore scores nodes by cpu and memory use after placing the
// pod (requests of zero count as the scoring defaults): LeastAllocated
// prefers emptier nodes, MostAllocated fuller ones.
type NodeResourcesScore struct{ Strategy ScoringStrategy }

var _ framework.ScorePlugin = NodeResourcesScore{}

func (NodeResourcesScore) Name() string { return "NodeResourcesFit" }

func (s NodeResourcesScore) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	want := nonZeroRequests(state, pod)
	cpu := allocatedScore(ni.NonZeroRequested.MilliCPU+want.MilliCPU, ni.Allocatable.MilliCPU, s.Strategy)
	mem := allocatedScore(ni.NonZeroRequested.Memory+want.Memory, ni.Allocatable.Memory, s.Strategy)
	return (cpu + mem) / 2
}

// allocatedScore: an over-committed node is full (0 for LeastAllocated,
// 100 for MostAllocated).
func allocatedScore(requested, capacity int64, strategy ScoringStrategy) int64 {
	if capacity <= 0 {
		return 0
	}
	requested = min(requested, capacity)
	if strategy == MostAllocated {
		return requested * framework.MaxNodeScore / capacity
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// NodeResourcesBalancedAllocation prefers nodes whose cpu and memory would
// be used in equal fractions after placing the pod.
type NodeResourcesBalancedAllocation struct{}

var _ framework.ScorePlugin = NodeResourcesBalancedAllocation{}

func (NodeResourcesBalancedAllocation) Name() string { return "NodeResourcesBalancedAllocation" }

func (NodeResourcesBalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	want := podRequests(state, pod)
	fraction := func(requested, capacity int64) float64 {
		if capacity <= 0 {
			return 0
		}
		return math.Min(1, float64(requested)/float64(capacity))
	}
	cpu := fraction(ni.Requested.MilliCPU+want.MilliCPU, ni.Allocatable.MilliCPU)
	mem := fraction(ni.Requested.Memory+want.Memory, ni.Allocatable.Memory)
	std := math.Abs(cpu-mem) / 2
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
