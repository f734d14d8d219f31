package podautoscaler

import (
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// downscaleWindow is how long a scale down is held to the highest recent
// recommendation when the autoscaler sets no window of its own
// (kube-controller-manager's --horizontal-pod-autoscaler-downscale-stabilization).
const downscaleWindow = 5 * time.Minute

// timed is a replica count (a recommendation, or the size of a rescale)
// and when it was made.
type timed struct {
	replicas int32
	at       time.Time
}

// history is what the controller remembers of one autoscaler between
// syncs: its recent recommendations for the stabilization windows, its
// recent rescales for the scaling policies' periods, and its target's
// selector to find autoscalers that share pods. Only the worker syncing
// the autoscaler touches its history.
type history struct {
	recommendations []timed
	ups, downs      []timed
	selector        labels.Selector
}

// reasoned is a condition's reason and message.
type reasoned struct{ reason, message string }

var (
	readyForNewScale    = reasoned{"ReadyForNewScale", "recommended size matches current size"}
	scaleUpStabilized   = reasoned{"ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"}
	scaleDownStabilized = reasoned{"ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"}
	withinRange         = reasoned{"DesiredWithinRange", "the desired count is within the acceptable range"}
	tooFew              = reasoned{"TooFewReplicas", "the desired replica count is less than the minimum replica count"}
	tooMany             = reasoned{"TooManyReplicas", "the desired replica count is more than the maximum replica count"}
	scaleUpLimit        = reasoned{"ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"}
	scaleDownLimit      = reasoned{"ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"}
)

// normalized is the replica count an autoscaler scales to, with why
// (AbleToScale's reason) and whether (ScalingLimited) it differs from
// the metrics' recommendation.
type normalized struct {
	replicas   int32
	stabilized reasoned
	limited    bool
	limit      reasoned
}

// bound is a limit of the replica count and its reason.
type bound struct {
	replicas int32
	why      reasoned
}

// seed records the replica count an autoscaler found its target at when
// the controller first saw it, so that a scale down waits a window.
func (h *history) seed(current int32, now time.Time) {
	if h.recommendations == nil {
		h.recommendations = []timed{{current, now}}
	}
}

// normalize turns the metrics' recommendation desired into the count to
// scale to from current, and records desired. The count stays between
// the lowest recommendation of the scale-up window and the highest of
// the scale-down window, moves no further than the policies allow and
// keeps within min and max replicas. It expects current to be within
// them, and spec defaulted as the API server defaults it
// (registry.DefaultAutoscaler): with behavior, both directions' rules
// are set.
func (h *history) normalize(spec *autoscalingv2.HorizontalPodAutoscalerSpec, current, desired int32, now time.Time) normalized {
	minReplicas := ptr.Deref(spec.MinReplicas, 1)
	if spec.Behavior == nil {
		return h.normalizeWithoutBehavior(minReplicas, spec.MaxReplicas, current, desired, now)
	}
	up, down := spec.Behavior.ScaleUp, spec.Behavior.ScaleDown
	upWindow, downWindow := window(up, 0), window(down, downscaleWindow)
	lowest, highest := h.recent(desired, upWindow, downWindow, now)
	h.recommendations = appendRecent(h.recommendations, timed{desired, now}, max(upWindow, downWindow))
	stabilized := min(max(current, lowest), highest)
	n := normalized{stabilized: readyForNewScale}
	switch {
	case stabilized != desired && desired >= current:
		n.stabilized = scaleUpStabilized
	case stabilized != desired:
		n.stabilized = scaleDownStabilized
	}
	lo := bound{minReplicas, tooFew}
	if l := min(h.limit(down, current, false, now), current); l > minReplicas {
		lo = bound{l, scaleDownLimit}
	}
	hi := bound{spec.MaxReplicas, tooMany}
	if l := max(h.limit(up, current, true, now), current); l < spec.MaxReplicas {
		hi = bound{l, scaleUpLimit}
	}
	return clamp(n, stabilized, lo, hi)
}

// normalizeWithoutBehavior is the older rule of autoscalers without
// spec.behavior: the highest recommendation of the last five minutes
// wins, and a scale up goes at most to twice the count (4 at least).
func (h *history) normalizeWithoutBehavior(minReplicas, maxReplicas, current, desired int32, now time.Time) normalized {
	_, highest := h.recent(desired, 0, downscaleWindow, now)
	h.recommendations = appendRecent(h.recommendations, timed{desired, now}, downscaleWindow)
	n := normalized{stabilized: readyForNewScale}
	if highest != desired {
		n.stabilized = scaleDownStabilized
	}
	hi := bound{maxReplicas, tooMany}
	if l := max(2*current, 4); l < maxReplicas {
		hi = bound{l, scaleUpLimit}
	}
	return clamp(n, highest, bound{minReplicas, tooFew}, hi)
}

// clamp keeps desired within lo and hi.
func clamp(n normalized, desired int32, lo, hi bound) normalized {
	n.replicas, n.limit = desired, withinRange
	switch {
	case desired < lo.replicas:
		n.replicas, n.limit = lo.replicas, lo.why
	case desired > hi.replicas:
		n.replicas, n.limit = hi.replicas, hi.why
	}
	n.limited = n.replicas != desired
	return n
}

// recent is the lowest recommendation, desired included, of the last
// upWindow and the highest of the last downWindow.
func (h *history) recent(desired int32, upWindow, downWindow time.Duration, now time.Time) (lowest, highest int32) {
	lowest, highest = desired, desired
	for _, r := range h.recommendations {
		if r.at.After(now.Add(-upWindow)) {
			lowest = min(lowest, r.replicas)
		}
		if r.at.After(now.Add(-downWindow)) {
			highest = max(highest, r.replicas)
		}
	}
	return lowest, highest
}

// recordScale remembers a rescale from one count to another for the
// scaling policies (autoscalers without behavior have none).
func (h *history) recordScale(b *autoscalingv2.HorizontalPodAutoscalerBehavior, from, to int32, now time.Time) {
	if b == nil {
		return
	}
	if to > from {
		h.ups = appendRecent(h.ups, timed{to - from, now}, longestPeriod(b.ScaleUp))
	} else {
		h.downs = appendRecent(h.downs, timed{from - to, now}, longestPeriod(b.ScaleDown))
	}
}

// limit is how far rules let the count go from current, up or down: each
// policy counts from the count its period began with (the rescales since
// undone); Max selects the policy that allows the biggest change, Min
// the smallest, Disabled none.
func (h *history) limit(rules *autoscalingv2.HPAScalingRules, current int32, up bool, now time.Time) int32 {
	sel := ptr.Deref(rules.SelectPolicy, autoscalingv2.MaxChangePolicySelect)
	if sel == autoscalingv2.DisabledPolicySelect || len(rules.Policies) == 0 {
		return current
	}
	var limits []int32
	for _, p := range rules.Policies {
		period := time.Duration(p.PeriodSeconds) * time.Second
		start := current - changedSince(h.ups, now.Add(-period)) + changedSince(h.downs, now.Add(-period))
		limits = append(limits, policyLimit(p, start, up))
	}
	if (sel == autoscalingv2.MaxChangePolicySelect) == up {
		return slices.Max(limits)
	}
	return slices.Min(limits)
}

// policyLimit is the count p lets a period that began at start reach; a
// percentage up rounds up, so that it always allows a pod more.
func policyLimit(p autoscalingv2.HPAScalingPolicy, start int32, up bool) int32 {
	switch {
	case p.Type == autoscalingv2.PodsScalingPolicy && up:
		return start + p.Value
	case p.Type == autoscalingv2.PodsScalingPolicy:
		return start - p.Value
	case up:
		return int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
	}
	return int32(float64(start) * (1 - float64(p.Value)/100))
}

func changedSince(events []timed, cutoff time.Time) int32 {
	var total int32
	for _, e := range events {
		if e.at.After(cutoff) {
			total += e.replicas
		}
	}
	return total
}

// appendRecent appends t to list and drops what is older than keep
// before it.
func appendRecent(list []timed, t timed, keep time.Duration) []timed {
	list = slices.DeleteFunc(list, func(e timed) bool { return e.at.Before(t.at.Add(-keep)) })
	return append(list, t)
}

// window is the stabilization window of rules, def when they set none.
func window(rules *autoscalingv2.HPAScalingRules, def time.Duration) time.Duration {
	if rules.StabilizationWindowSeconds == nil {
		return def
	}
	return time.Duration(*rules.StabilizationWindowSeconds) * time.Second
}

func longestPeriod(rules *autoscalingv2.HPAScalingRules) time.Duration {
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return time.Duration(longest) * time.Second
}
