package scheduler

import (
	"k8s.io/component-base/metrics"

	skiffmetrics "github.com/skiff-lab/skiff/metrics"
)

// The results an attempt counts under, as kube-scheduler's.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// The scheduler's metrics carry kube-scheduler's names and labels.
var (
	scheduleAttempts = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: "scheduler",
		Name:      "schedule_attempts_total",
		Help:      "Scheduling attempts by result: scheduled (bound), unschedulable (no node fits) or error.",
	}, []string{"result", "profile"})
	attemptDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: "scheduler",
		Name:      "scheduling_attempt_duration_seconds",
		Help:      "How long one scheduling attempt took, from leaving the queue to bound or requeued, by result.",
		Buckets:   metrics.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result", "profile"})
	pendingPods = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: "scheduler",
		Name:      "pending_pods",
		Help:      "Pods waiting to be scheduled, by the part of the queue they wait in: active, backoff or unschedulable.",
	}, []string{"queue"})
	preemptionAttempts = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: "scheduler",
		Name:      "preemption_attempts_total",
		Help:      "Preemptions: lower-priority pods evicted to make room for a pod.",
	})
)

// registerMetrics registers the scheduler's metrics, each result's counter
// at zero.
func registerMetrics() {
	skiffmetrics.Register(scheduleAttempts, attemptDuration, pendingPods, preemptionAttempts)
	for _, result := range []string{resultScheduled, resultUnschedulable, resultError} {
		scheduleAttempts.WithLabelValues(result, Name)
	}
}

// report sets the pending_pods gauge from the queue's parts.
func (q *Queue) report() {
	active, backoff, unschedulable := q.Len()
	pendingPods.WithLabelValues("active").Set(float64(active))
	pendingPods.WithLabelValues("backoff").Set(float64(backoff))
	pendingPods.WithLabelValues("unschedulable").Set(float64(unschedulable))
}
