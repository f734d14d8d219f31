package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// eviction is what a pod's tolerations make of a node's NoExecute taints.
type eviction struct {
	// evict is false when the pod tolerates every taint forever.
	evict bool
	// at is when the pod must go; a zero time means at once.
	at time.Time
}

// evictionFor decides when a pod with tolerations must leave a node with
// the given taints, as kube's taint eviction controller does: only
// NoExecute taints count; a taint no toleration matches evicts at once;
// otherwise the first matching toleration decides — without
// tolerationSeconds it tolerates forever, with tolerationSeconds <= 0 not
// at all, else for that long after the taint's timeAdded (or since, when
// the taint has none). The earliest deadline of all taints wins.
func evictionFor(tolerations []corev1.Toleration, taints []corev1.Taint, since time.Time) eviction {
	var out eviction
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tol := firstTolerating(tolerations, taint)
		switch {
		case tol == nil, tol.TolerationSeconds != nil && *tol.TolerationSeconds <= 0:
			return eviction{evict: true}
		case tol.TolerationSeconds == nil:
			continue
		}
		start := since
		if taint.TimeAdded != nil {
			start = taint.TimeAdded.Time
		}
		at := start.Add(time.Duration(*tol.TolerationSeconds) * time.Second)
		if !out.evict || at.Before(out.at) {
			out = eviction{evict: true, at: at}
		}
	}
	return out
}

// noExecuteTaints are the NoExecute taints of node.
func noExecuteTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

func firstTolerating(tolerations []corev1.Toleration, taint *corev1.Taint) *corev1.Toleration {
	for i := range tolerations {
		// Lt/Gt comparison operators stay off, as in the scheduler.
		if tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
			return &tolerations[i]
		}
	}
	return nil
}
