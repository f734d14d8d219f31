package podgc

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// What a pass deletes, decided from the informer caches. These functions
// do no I/O and keep no state but what they are given.

// terminatedToDelete returns the terminated (Succeeded or Failed) pods
// beyond the first threshold, in the order to delete them: evicted pods
// first, then oldest first, names breaking ties. threshold <= 0 keeps all.
func terminatedToDelete(pods []*corev1.Pod, threshold int) []*corev1.Pod {
	if threshold <= 0 {
		return nil
	}
	var terminated []*corev1.Pod
	for _, p := range pods {
		if isTerminated(p) {
			terminated = append(terminated, p)
		}
	}
	n := len(terminated) - threshold
	if n <= 0 {
		return nil
	}
	slices.SortFunc(terminated, func(a, b *corev1.Pod) int {
		if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return terminated[:n]
}

// missingNodes are the nodes pods are bound to that nodes does not hold.
func missingNodes(pods []*corev1.Pod, nodes []*corev1.Node) sets.Set[string] {
	existing := sets.New[string]()
	for _, n := range nodes {
		existing.Insert(n.Name)
	}
	missing := sets.New[string]()
	for _, p := range pods {
		if p.Spec.NodeName != "" && !existing.Has(p.Spec.NodeName) {
			missing.Insert(p.Spec.NodeName)
		}
	}
	return missing
}

// podsOn are the pods bound to one of nodes.
func podsOn(pods []*corev1.Pod, nodes sets.Set[string]) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" && nodes.Has(p.Spec.NodeName) {
			out = append(out, p)
		}
	}
	return out
}

// unscheduledTerminating are pods being deleted that no node will finish.
func unscheduledTerminating(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// terminatingOutOfService are pods being deleted on nodes an operator has
// declared out of service (node.kubernetes.io/out-of-service) and that are
// not Ready: their agent will not finish them.
func terminatingOutOfService(pods []*corev1.Pod, nodes []*corev1.Node) []*corev1.Pod {
	out := sets.New[string]()
	for _, n := range nodes {
		if !isReady(n) && hasTaintKey(n, corev1.TaintNodeOutOfService) {
			out.Insert(n.Name)
		}
	}
	var terminating []*corev1.Pod
	for _, p := range podsOn(pods, out) {
		if p.DeletionTimestamp != nil {
			terminating = append(terminating, p)
		}
	}
	return terminating
}

// quarantine remembers since when each node pods are bound to has been
// missing from the cache, so that a node is only looked for on the API
// server once it has been missing for a while: a pod may be bound to a
// node the cache has not seen yet.
type quarantine map[string]time.Time

// due updates q with the nodes missing now and returns those missing for
// at least period, and how long until the next one will be (zero if none
// waits). Nodes no longer missing are forgotten.
func (q quarantine) due(missing sets.Set[string], now time.Time, period time.Duration) (sets.Set[string], time.Duration) {
	for name := range q {
		if !missing.Has(name) {
			delete(q, name)
		}
	}
	ready := sets.New[string]()
	var next time.Duration
	for name := range missing {
		since, ok := q[name]
		if !ok {
			since = now
			q[name] = now
		}
		if wait := since.Add(period).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		ready.Insert(name)
	}
	return ready, next
}

func isTerminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// isEvicted is kubelet's mark of a pod it evicted under node pressure.
func isEvicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaintKey(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
