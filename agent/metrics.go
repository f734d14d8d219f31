package agent

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"

	"github.com/skiff-lab/skiff/cri"
	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

// The agent's metrics carry the kubelet's names, so that dashboards made
// for the kubelet read them.
var (
	nodeName = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: "kubelet", Name: "node_name",
		Help: "The node's name, as a label of a series that is always 1.",
	}, []string{"node"})
	runningPods = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: "kubelet", Name: "running_pods",
		Help: "Pods whose sandbox runs, at the last relist.",
	})
	runningContainers = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: "kubelet", Name: "running_containers",
		Help: "Containers by state (created, running, exited, unknown), at the last relist.",
	}, []string{"container_state"})
	relistDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: "kubelet", Name: "pleg_relist_duration_seconds",
		Help:    "How long listing the node's sandboxes and containers took.",
		Buckets: metrics.DefBuckets,
	})
	podStartDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: "kubelet", Name: "pod_start_duration_seconds",
		Help:    "From the agent first seeing a pod to its status past Pending written (image pulls included).",
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 600, 900, 1800, 3600},
	})
	startedContainers = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "kubelet", Name: "started_containers_total",
		Help: "Containers started, by type (container, init_container, ephemeral_container).",
	}, []string{"container_type"})
	imagePullDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: "kubelet", Name: "image_pull_duration_seconds",
		Help:    "How long successful image pulls took.",
		Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 300, 600},
	})
	evictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "kubelet", Name: "evictions",
		Help: "Pods evicted, by the signal that evicted them.",
	}, []string{"eviction_signal"})
)

// The container types started_containers_total counts, and the one
// eviction signal the agent acts on (an emptyDir over its sizeLimit).
const (
	typeContainer      = "container"
	typeInitContainer  = "init_container"
	typeEphemeral      = "ephemeral_container"
	signalEmptyDirFull = "emptydirfs.limit"
)

// registerMetrics registers the agent's metrics, each known label value's
// counter at zero, and names the node.
func registerMetrics(node string) {
	skiffmetrics.Register(nodeName, runningPods, runningContainers, relistDuration, podStartDuration,
		startedContainers, imagePullDuration, evictions)
	for _, kind := range []string{typeContainer, typeInitContainer, typeEphemeral} {
		startedContainers.WithLabelValues(kind)
	}
	evictions.WithLabelValues(signalEmptyDirFull)
	nodeName.WithLabelValues(node).Set(1)
}

// observeRelist records a relist: how long it took and what runs.
func observeRelist(all []cri.Container, took time.Duration) {
	relistDuration.Observe(took.Seconds())
	pods := 0
	states := map[cri.State]int{cri.StateCreated: 0, cri.StateRunning: 0, cri.StateExited: 0, cri.StateUnknown: 0}
	for _, c := range all {
		switch {
		case c.Kind == cri.KindSandbox && c.State == cri.StateRunning:
			pods++
		case c.Kind == cri.KindContainer:
			states[c.State]++
		}
	}
	runningPods.Set(float64(pods))
	for state, n := range states {
		runningContainers.WithLabelValues(string(state)).Set(float64(n))
	}
}

// containerType is the started_containers_total type of a container that
// act starts in pod.
func containerType(pod *v1.Pod, act startAction) string {
	switch {
	case act.Init:
		return typeInitContainer
	case slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c v1.EphemeralContainer) bool { return c.Name == act.Container.Name }):
		return typeEphemeral
	}
	return typeContainer
}
