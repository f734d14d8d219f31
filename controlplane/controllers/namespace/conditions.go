package namespace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTypes are the namespace conditions this controller owns, in the
// order it writes them.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// allClear is each condition when nothing is wrong: False, with the
// reasons and messages kube-controller-manager uses.
var allClear = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentRemoved", "All content successfully removed"},
}

// conditions returns the condition of every owned type that rep calls
// for, without transition times: True with what went wrong or what
// remains, else the all-clear.
func conditions(rep report) []corev1.NamespaceCondition {
	failing := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	fail := func(t corev1.NamespaceConditionType, reason, msg string) {
		failing[t] = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
	}
	if rep.discoveryErr != nil {
		fail(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", rep.discoveryErr.Error())
	}
	if rep.parseErr != nil {
		fail(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", rep.parseErr.Error())
	}
	if len(rep.failed) > 0 {
		msgs := slices.Sorted(slices.Values(rep.failed))
		fail(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", ")))
	}
	if len(rep.remaining) > 0 {
		var parts []string
		for gr, n := range rep.remaining {
			parts = append(parts, fmt.Sprintf("%s.%s has %d resource instances", gr.Resource, gr.Group, n))
		}
		slices.Sort(parts)
		fail(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(parts, ", "))
	}
	if len(rep.finalizers) > 0 {
		var parts []string
		for _, f := range slices.Sorted(maps.Keys(rep.finalizers)) {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, rep.finalizers[f]))
		}
		fail(corev1.NamespaceFinalizersRemaining, "SomeFinalizerRemain", "Some finalizers are remaining: "+strings.Join(parts, ", "))
	}
	out := make([]corev1.NamespaceCondition, 0, len(conditionTypes))
	for _, t := range conditionTypes {
		c, ok := failing[t]
		if !ok {
			c = corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: allClear[t].reason, Message: allClear[t].message}
		}
		out = append(out, c)
	}
	return out
}

// mergeConditions returns have with each of want set on it: added when
// missing, rewritten when status, reason or message differ, its transition
// time moved to now only when the status changes. Conditions of other
// types are kept. changed reports whether the result differs from have.
func mergeConditions(have, want []corev1.NamespaceCondition, now metav1.Time) (out []corev1.NamespaceCondition, changed bool) {
	out = slices.Clone(have)
	for _, w := range want {
		i := slices.IndexFunc(out, func(c corev1.NamespaceCondition) bool { return c.Type == w.Type })
		if i < 0 {
			w.LastTransitionTime = now
			out = append(out, w)
			changed = true
			continue
		}
		old := out[i]
		if old.Status == w.Status && old.Reason == w.Reason && old.Message == w.Message {
			continue
		}
		w.LastTransitionTime = old.LastTransitionTime
		if old.Status != w.Status {
			w.LastTransitionTime = now
		}
		out[i] = w
		changed = true
	}
	return out, changed
}
