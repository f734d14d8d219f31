package deployment

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cleanupHistory deletes the old ReplicaSets historyToDelete picks. It
// stops at the first failure, as the API server may be overloaded.
func (c *Controller) cleanupHistory(ctx context.Context, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) error {
	for _, rs := range historyToDelete(d, oldRSs) {
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &rs.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replica set %s: %w", rs.Name, err)
		}
	}
	return nil
}

// historyToDelete picks the old ReplicaSets beyond revisionHistoryLimit,
// lowest revision first, among those not being deleted; of those only the
// ones that are scaled to 0, have no pods left and whose status is current
// go.
func historyToDelete(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	excess := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if excess <= 0 {
		return nil
	}
	slices.SortStableFunc(alive, compareRevision)
	var doomed []*appsv1.ReplicaSet
	for _, rs := range alive[:excess] {
		if size(rs) == 0 && rs.Status.Replicas == 0 && rs.Generation <= rs.Status.ObservedGeneration {
			doomed = append(doomed, rs)
		}
	}
	return doomed
}

// compareRevision orders ReplicaSets by revision, then by age.
func compareRevision(a, b *appsv1.ReplicaSet) int {
	ra, errA := revision(a)
	rb, errB := revision(b)
	if errA == nil && errB == nil && ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	return compareBool(createdBefore(a, b), createdBefore(b, a))
}
