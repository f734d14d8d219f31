package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
)

// rolloutRolling moves a RollingUpdate Deployment one step: create the new
// ReplicaSet if needed, then scale it up within maxSurge, or else scale
// old ReplicaSets down within maxUnavailable; once the rollout is
// complete, delete old ReplicaSets beyond the history limit.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if newRS == nil {
		var err error
		if newRS, err = c.createNewReplicaSet(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	allRSs := withNew(oldRSs, newRS)
	if target := rollingNewSize(d, allRSs, newRS); target != size(newRS) {
		if _, err := c.scaleReplicaSet(ctx, newRS, target, d); err != nil {
			return err
		}
		return c.syncRolloutStatus(ctx, d, allRSs, newRS)
	}
	plan := rollingScaleDown(d, allRSs, active(oldRSs), newRS)
	if err := c.apply(ctx, d, plan); err != nil {
		return err
	}
	if len(plan) == 0 && deploymentComplete(d, &d.Status) {
		if err := c.cleanupHistory(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, allRSs, newRS)
}

// rollingNewSize is the size a rolling update gives the new ReplicaSet
// now: spec.replicas at most, and no more than spec.replicas + maxSurge
// pods across all ReplicaSets.
func rollingNewSize(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	want, cur := *d.Spec.Replicas, size(newRS)
	if cur >= want {
		return want
	}
	return newReplicaSetSize(d, allRSs, newRS)
}

// newReplicaSetSize is how large the new ReplicaSet may grow now: for
// Recreate all of spec.replicas; for RollingUpdate what spec.replicas +
// maxSurge leaves beside the other ReplicaSets, up to spec.replicas.
func newReplicaSetSize(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	want, cur := *d.Spec.Replicas, size(newRS)
	if !isRollingUpdate(d) {
		return want
	}
	room := want + maxSurge(d) - specReplicas(allRSs)
	if room <= 0 {
		return cur
	}
	return cur + min(room, want-cur)
}

// rollingScaleDown plans how far the active old ReplicaSets shrink in this
// step. Pods are counted across all ReplicaSets: at most
// total - (replicas - maxUnavailable) - (unavailable pods of the new
// ReplicaSet) may go. First unavailable old pods go, oldest ReplicaSet
// first, since removing them costs no availability and they would block
// the rollout; then available ones, oldest ReplicaSet first, while more
// than replicas - maxUnavailable pods stay available.
func rollingScaleDown(d *appsv1.Deployment, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []resize {
	if specReplicas(oldRSs) == 0 {
		return nil
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := size(newRS) - keptAvailable(newRS)
	budget := specReplicas(allRSs) - minAvailable - newUnavailable
	if budget <= 0 {
		return nil
	}
	old := byCreation(oldRSs)
	sizes := make([]int32, len(old))
	for i, rs := range old {
		sizes[i] = size(rs)
	}
	for i, rs := range old { // unavailable pods first
		n := min(budget, sizes[i]-keptAvailable(rs))
		if n > 0 {
			sizes[i] -= n
			budget -= n
		}
	}
	available := sum(withNew(oldRSs, newRS), keptAvailable)
	for i := range old { // then available pods, keeping minAvailable
		if available <= minAvailable {
			break
		}
		n := min(available-minAvailable, sizes[i])
		sizes[i] -= n
		available -= n
	}
	var plan []resize
	for i, rs := range old {
		if sizes[i] != size(rs) {
			plan = append(plan, resize{rs, sizes[i]})
		}
	}
	return plan
}
