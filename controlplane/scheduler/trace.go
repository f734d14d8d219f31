package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/skiff-lab/skiff/podtrace"
)

// maxWhyNotNodes bounds how many nodes' verdicts a failed attempt's step
// keeps (in name order).
const maxWhyNotNodes = 100

// traceDecision records the attempt's wait in the queue and its decision
// as steps of the pod's journey.
func (s *Scheduler) traceDecision(a attempt, dec decision) {
	if !s.tracer.Traces(a.pod) {
		return
	}
	s.tracer.Step(a.pod, "scheduler.queue", a.queued, a.start, nil, attribute.Int("attempt", a.attempts))
	attrs := []attribute.KeyValue{attribute.String("node", dec.node), attribute.Int("feasible", dec.feasible)}
	if len(dec.rejected) > 0 {
		attrs = append(attrs, attribute.String("rejected", counts(dec.rejected)))
	}
	if len(dec.top) > 1 {
		attrs = append(attrs, attribute.String("scores", strings.Join(dec.top, " ")))
	}
	s.tracer.Step(a.pod, "scheduler.schedule", a.start, a.decided, nil, attrs...)
}

// traceFailure records an attempt that found no node, from the pod's
// turn in the queue, with each node's verdict.
func (s *Scheduler) traceFailure(a attempt, err error) {
	if !s.tracer.Traces(a.pod) {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("attempt", a.attempts)}
	var fe *FitError
	if errors.As(err, &fe) {
		nodes := slices.Sorted(maps.Keys(fe.Nodes))
		for _, node := range nodes[:min(len(nodes), maxWhyNotNodes)] {
			attrs = append(attrs, attribute.String(podtrace.AttrWhyNot+node, fe.Nodes[node]))
		}
	}
	s.tracer.Step(a.pod, "scheduler.schedule", a.queued, a.decided, err, attrs...)
}

// traceBind records the binding of the attempt's pod to node.
func (s *Scheduler) traceBind(a attempt, node string, err error) {
	s.tracer.Step(a.pod, "scheduler.bind", a.decided, time.Now(), err, attribute.String("node", node))
}

// counts writes name=count pairs in name order.
func counts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
