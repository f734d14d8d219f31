package deployment

import (
	"cmp"
	"context"
	"math"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// syncScale applies a change of spec.replicas without moving the rollout
// on (also while paused), deletes surplus history of a paused Deployment,
// and writes the status.
func (c *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if err := c.apply(ctx, d, scalePlan(d, newRS, oldRSs)); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanupHistory(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, d, withNew(oldRSs, newRS), newRS)
}

// isScalingEvent reports whether spec.replicas changed since an active
// ReplicaSet was last scaled, as its desired-replicas annotation says.
func isScalingEvent(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) bool {
	for _, rs := range active(withNew(oldRSs, newRS)) {
		if desired, ok := int32Annotation(rs, desiredReplicasAnnotation); ok && desired != *d.Spec.Replicas {
			return true
		}
	}
	return false
}

// scalePlan sizes the ReplicaSets for spec.replicas:
//   - with one active ReplicaSet (or none: then the newest), all of
//     spec.replicas go to it;
//   - with a saturated new ReplicaSet, the old ones go to 0;
//   - otherwise, in a rolling update, the difference between
//     spec.replicas + maxSurge and the pods asked for is spread over the
//     active ReplicaSets in proportion to their size (proportionalSizes).
//
// Every active ReplicaSet of a proportional plan is in it, also at an
// unchanged size, so that its replicas annotations are brought up to date.
func scalePlan(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) []resize {
	if rs := activeOrLatest(newRS, oldRSs); rs != nil {
		if size(rs) == *d.Spec.Replicas {
			return nil
		}
		return []resize{{rs, *d.Spec.Replicas}}
	}
	if isSaturated(d, newRS) {
		return scaleToZero(oldRSs)
	}
	if !isRollingUpdate(d) {
		return nil
	}
	return proportionalSizes(d, active(withNew(oldRSs, newRS)))
}

// activeOrLatest returns the only active ReplicaSet, or the newest when
// none is active (the new one if it exists); nil when several are active.
func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	all := withNew(oldRSs, newRS)
	switch act := active(all); len(act) {
	case 0:
		if newRS != nil {
			return newRS
		}
		if len(oldRSs) == 0 {
			return nil
		}
		return slices.MaxFunc(oldRSs, func(a, b *appsv1.ReplicaSet) int {
			return compareBool(createdBefore(a, b), createdBefore(b, a))
		})
	case 1:
		return act[0]
	}
	return nil
}

// isSaturated reports whether rs runs all of spec.replicas, available, and
// was sized for the current spec.replicas.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := int32Annotation(rs, desiredReplicasAnnotation)
	return ok && desired == *d.Spec.Replicas && size(rs) == *d.Spec.Replicas && rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// proportionalSizes spreads the pods to add (or remove) to reach
// spec.replicas + maxSurge (0 when scaling to 0) over the active
// ReplicaSets, each in proportion to its share of the Deployment's size
// when it was last scaled (its max-replicas annotation). Larger
// ReplicaSets come first, newer first among equals when adding, older
// first when removing; the rounding leftover goes to the first.
func proportionalSizes(d *appsv1.Deployment, activeRSs []*appsv1.ReplicaSet) []resize {
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - specReplicas(activeRSs)
	rss := slices.Clone(activeRSs)
	slices.SortStableFunc(rss, func(a, b *appsv1.ReplicaSet) int {
		if c := cmp.Compare(size(b), size(a)); c != 0 {
			return c
		}
		older := compareBool(createdBefore(a, b), createdBefore(b, a))
		if toAdd > 0 {
			return -older // newer first
		}
		return older
	})
	plan := make([]resize, len(rss))
	added := int32(0)
	for i, rs := range rss {
		p := proportion(d, rs, toAdd, added)
		plan[i] = resize{rs, size(rs) + p}
		added += p
	}
	if len(plan) > 0 && toAdd != 0 {
		plan[0].replicas = max(plan[0].replicas+toAdd-added, 0)
	}
	return plan
}

// proportion is rs's share of toAdd, of which added is handed out already.
func proportion(d *appsv1.Deployment, rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if size(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := fractionOf(d, rs)
	if toAdd > 0 {
		return min(fraction, toAdd-added)
	}
	return max(fraction, toAdd-added)
}

// fractionOf is how many pods rs gains (or, negative, loses) when it
// keeps its share of the Deployment at the new size.
func fractionOf(d *appsv1.Deployment, rs *appsv1.ReplicaSet) int32 {
	if *d.Spec.Replicas == 0 {
		return -size(rs)
	}
	newMax := *d.Spec.Replicas + maxSurge(d)
	oldMax, ok := int32Annotation(rs, maxReplicasAnnotation)
	if !ok || oldMax == 0 {
		oldMax = d.Status.Replicas // annotation lost: the current size
		if oldMax == 0 {
			return 0
		}
	}
	scaled := float64(size(rs)) * float64(newMax) / float64(oldMax)
	return int32(math.Round(scaled)) - size(rs)
}
