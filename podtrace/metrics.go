package podtrace

import (
	"k8s.io/component-base/metrics"

	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

var stepDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
	Namespace: "skiff", Subsystem: "pod", Name: "journey_step_duration_seconds",
	Help: "How long each step of pods' journeys took (scheduling, sandbox, images, containers, readiness, ...), " +
		"by step and node (empty for steps of the control plane); failed steps are not counted.",
	Buckets: metrics.ExponentialBuckets(0.0005, 2, 16),
}, []string{"step", "node"})

// ObserveSteps registers the step duration histogram and feeds it every
// successful step added to store but those forwarded by another server,
// which counts them itself.
func ObserveSteps(store *Store) (cancel func()) {
	skiffmetrics.Register(stepDuration)
	return store.Subscribe(func(_ Journey, s Step) {
		if s.Error == "" && !s.fromPeer {
			stepDuration.WithLabelValues(s.Name, s.Node).Observe(s.Duration().Seconds())
		}
	})
}
