package deployment

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// Counting and ordering ReplicaSets. Every function here takes lists that
// may hold a nil new ReplicaSet (one not created yet) and skips it.

func size(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// sum adds f over the ReplicaSets.
func sum(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

// specReplicas is how many pods the ReplicaSets are asked for.
func specReplicas(rss []*appsv1.ReplicaSet) int32 { return sum(rss, size) }

// actualReplicas is how many pods the ReplicaSets report.
func actualReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas })
}

func readyReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.ReadyReplicas })
}

func availableReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sum(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
}

// keptAvailable is how many available pods a ReplicaSet keeps once it has
// reached its size: at most spec.replicas, as the ReplicaSet controller
// deletes unavailable pods first. It keeps a scale-down that the
// ReplicaSet's status does not show yet from being counted twice.
func keptAvailable(rs *appsv1.ReplicaSet) int32 {
	return min(rs.Status.AvailableReplicas, size(rs))
}

// terminatingReplicas sums the ReplicaSets' terminating pods; nil when a
// ReplicaSet that has been synced does not report them.
func terminatingReplicas(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.TerminatingReplicas != nil:
			n += *rs.Status.TerminatingReplicas
		case rs.Status.ObservedGeneration == 0:
			// Not synced by the ReplicaSet controller yet.
		default:
			return nil
		}
	}
	return &n
}

// active are the ReplicaSets asked for pods.
func active(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if size(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// withNew is the old ReplicaSets followed by the new one, if any.
func withNew(oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	all := slices.Clone(oldRSs)
	if newRS != nil {
		all = append(all, newRS)
	}
	return all
}

// createdBefore orders ReplicaSets oldest first, by name among equals.
func createdBefore(a, b *appsv1.ReplicaSet) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// byCreation returns the ReplicaSets sorted oldest first.
func byCreation(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	return slices.SortedStableFunc(slices.Values(rss), func(a, b *appsv1.ReplicaSet) int {
		return compareBool(createdBefore(a, b), createdBefore(b, a))
	})
}

// compareBool turns two "less" answers into a comparison result.
func compareBool(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}
