package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
)

// step is one sync: at a time since t0, the metrics recommend desired
// with the target at current; the controller scales to want (recording
// the rescale) for the reasons given.
type step struct {
	at                    time.Duration
	current, desired      int32
	want                  int32
	stabilized, limitedBy string
}

func TestNormalize(t *testing.T) {
	defaults := func(mutate func(b *autoscalingv2.HorizontalPodAutoscalerBehavior)) *autoscalingv2.HorizontalPodAutoscalerBehavior {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: registry.ScaleUpRules(), ScaleDown: registry.ScaleDownRules()}
		if mutate != nil {
			mutate(b)
		}
		return b
	}
	tests := []struct {
		name     string
		min, max int32
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		seed     int32 // the count the controller first saw, if any
		steps    []step
	}{
		{name: "without behavior a scale up at most doubles, to 4 at least", min: 1, max: 20,
			steps: []step{{current: 1, desired: 10, want: 4, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"},
				{current: 4, desired: 10, want: 8, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"},
				{current: 8, desired: 10, want: 10, stabilized: "ReadyForNewScale", limitedBy: "DesiredWithinRange"}}},
		{name: "max replicas", min: 1, max: 8,
			steps: []step{{current: 5, desired: 30, want: 8, stabilized: "ReadyForNewScale", limitedBy: "TooManyReplicas"}}},
		{name: "min replicas", min: 2, max: 10,
			steps: []step{{current: 3, desired: 1, want: 2, stabilized: "ReadyForNewScale", limitedBy: "TooFewReplicas"}}},
		{name: "a scale down keeps the highest recommendation of five minutes", min: 1, max: 10,
			steps: []step{{current: 5, desired: 8, want: 8, stabilized: "ReadyForNewScale", limitedBy: "DesiredWithinRange"},
				{at: time.Minute, current: 8, desired: 3, want: 8, stabilized: "ScaleDownStabilized", limitedBy: "DesiredWithinRange"},
				{at: 4 * time.Minute, current: 8, desired: 4, want: 8, stabilized: "ScaleDownStabilized", limitedBy: "DesiredWithinRange"},
				{at: 5*time.Minute + time.Second, current: 8, desired: 3, want: 4, stabilized: "ScaleDownStabilized", limitedBy: "DesiredWithinRange"}}},
		{name: "default behavior scales up by 4 pods or 100% per 15 s", min: 1, max: 50, behavior: defaults(nil),
			steps: []step{{current: 2, desired: 20, want: 6, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"},
				{at: 5 * time.Second, current: 6, desired: 20, want: 6, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"},
				{at: 16 * time.Second, current: 6, desired: 20, want: 12, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"},
				{at: 32 * time.Second, current: 12, desired: 20, want: 20, stabilized: "ReadyForNewScale", limitedBy: "DesiredWithinRange"}}},
		{name: "default behavior waits five minutes since the first look to scale down", min: 1, max: 10, behavior: defaults(nil), seed: 10,
			steps: []step{{current: 10, desired: 2, want: 10, stabilized: "ScaleDownStabilized", limitedBy: "DesiredWithinRange"},
				{at: 5*time.Minute + time.Second, current: 10, desired: 2, want: 2, stabilized: "ReadyForNewScale", limitedBy: "DesiredWithinRange"}}},
		{name: "a pods policy limits a scale down per period", min: 1, max: 10,
			behavior: defaults(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
				b.ScaleDown = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}
			}),
			steps: []step{{current: 5, desired: 1, want: 4, stabilized: "ReadyForNewScale", limitedBy: "ScaleDownLimit"},
				{at: 30 * time.Second, current: 4, desired: 1, want: 4, stabilized: "ReadyForNewScale", limitedBy: "ScaleDownLimit"},
				{at: 61 * time.Second, current: 4, desired: 1, want: 3, stabilized: "ReadyForNewScale", limitedBy: "ScaleDownLimit"}}},
		{name: "select Min takes the policy allowing the smallest change", min: 1, max: 50,
			behavior: defaults(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
				b.ScaleUp.SelectPolicy = ptr.To(autoscalingv2.MinChangePolicySelect)
			}),
			steps: []step{{current: 10, desired: 40, want: 14, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"}}},
		{name: "select Disabled does not scale up", min: 1, max: 50,
			behavior: defaults(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
				b.ScaleUp.SelectPolicy = ptr.To(autoscalingv2.DisabledPolicySelect)
			}),
			steps: []step{{current: 3, desired: 6, want: 3, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"}}},
		{name: "a scale-up window keeps the lowest recommendation", min: 1, max: 50,
			behavior: defaults(func(b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
				b.ScaleUp.StabilizationWindowSeconds = ptr.To[int32](60)
			}),
			steps: []step{{current: 3, desired: 3, want: 3, stabilized: "ReadyForNewScale", limitedBy: "DesiredWithinRange"},
				{at: 10 * time.Second, current: 3, desired: 8, want: 3, stabilized: "ScaleUpStabilized", limitedBy: "DesiredWithinRange"},
				{at: 61 * time.Second, current: 3, desired: 8, want: 7, stabilized: "ReadyForNewScale", limitedBy: "ScaleUpLimit"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &tt.min, MaxReplicas: tt.max, Behavior: tt.behavior}
			h := &history{}
			if tt.seed != 0 {
				h.seed(tt.seed, t0)
			}
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				n := h.normalize(spec, s.current, s.desired, now)
				if n.replicas != s.want || n.stabilized.reason != s.stabilized || n.limit.reason != s.limitedBy || n.limited != (s.limitedBy != "DesiredWithinRange") {
					t.Fatalf("step %d: normalize(%d → %d) = %d (%s, %s, limited %v), want %d (%s, %s)", i, s.current, s.desired,
						n.replicas, n.stabilized.reason, n.limit.reason, n.limited, s.want, s.stabilized, s.limitedBy)
				}
				if n.replicas != s.current {
					h.recordScale(spec.Behavior, s.current, n.replicas, now)
				}
			}
		})
	}
}
