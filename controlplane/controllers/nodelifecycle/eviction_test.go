package nodelifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvictionFor(t *testing.T) {
	added := metav1.NewTime(t0)
	since := t0.Add(time.Minute) // when the controller first saw the pod there
	secs := func(n int64) *int64 { return &n }
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	custom := corev1.Taint{Key: "example.com/maintenance", Value: "yes", Effect: corev1.TaintEffectNoExecute} // no timeAdded
	noSchedule := corev1.Taint{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	tolerate := func(key string, s *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	never := eviction{}
	now := eviction{evict: true}
	at := func(t time.Time) eviction { return eviction{evict: true, at: t} }
	cases := []struct {
		name        string
		tolerations []corev1.Toleration
		taints      []corev1.Taint
		want        eviction
	}{
		{name: "no NoExecute taints", taints: []corev1.Taint{noSchedule}, want: never},
		{name: "untolerated: at once", taints: []corev1.Taint{unreachable}, want: now},
		{name: "tolerated forever", tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, nil)},
			taints: []corev1.Taint{unreachable}, want: never},
		{name: "tolerationSeconds from timeAdded", tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, secs(300))},
			taints: []corev1.Taint{unreachable}, want: at(t0.Add(300 * time.Second))},
		{name: "tolerationSeconds 0: at once", tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, secs(0))},
			taints: []corev1.Taint{unreachable}, want: now},
		{name: "negative tolerationSeconds: at once", tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, secs(-5))},
			taints: []corev1.Taint{unreachable}, want: now},
		{name: "a taint without timeAdded counts from when the pod was seen on it",
			tolerations: []corev1.Toleration{{Key: "example.com/maintenance", Operator: corev1.TolerationOpEqual, Value: "yes",
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(10)}},
			taints: []corev1.Taint{custom}, want: at(since.Add(10 * time.Second))},
		{name: "the earliest deadline of several taints wins",
			tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, secs(300)), tolerate(corev1.TaintNodeNotReady, secs(20))},
			taints:      []corev1.Taint{unreachable, notReady}, want: at(t0.Add(20 * time.Second))},
		{name: "one untolerated taint among tolerated ones: at once",
			tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, nil)},
			taints:      []corev1.Taint{unreachable, notReady}, want: now},
		{name: "the first matching toleration decides",
			tolerations: []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, secs(2)), tolerate("", nil)},
			taints:      []corev1.Taint{unreachable}, want: at(t0.Add(2 * time.Second))},
		{name: "an empty key with Exists tolerates everything forever",
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			taints:      []corev1.Taint{unreachable, custom}, want: never},
		{name: "a toleration for another effect does not count",
			tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			taints:      []corev1.Taint{unreachable}, want: now},
		{name: "Equal needs the value",
			tolerations: []corev1.Toleration{{Key: "example.com/maintenance", Value: "no", Effect: corev1.TaintEffectNoExecute}},
			taints:      []corev1.Taint{custom}, want: now},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := evictionFor(tc.tolerations, tc.taints, since)
			if got.evict != tc.want.evict || !got.at.Equal(tc.want.at) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
