package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resize is one step of a plan: set a ReplicaSet's spec.replicas.
type resize struct {
	rs       *appsv1.ReplicaSet
	replicas int32
}

// apply carries out a plan in order, stopping at the first failure.
func (c *Controller) apply(ctx context.Context, d *appsv1.Deployment, plan []resize) error {
	for _, step := range plan {
		if _, err := c.scaleReplicaSet(ctx, step.rs, step.replicas, d); err != nil {
			return err
		}
	}
	return nil
}

// scaleReplicaSet sets rs's size, and its desired- and max-replicas
// annotations to d's spec.replicas and spec.replicas + maxSurge, when
// either differs; a size change is reported as a ScalingReplicaSet event
// on d. The update carries the cached resourceVersion, so a decision
// taken on a stale ReplicaSet fails with a conflict.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	from := size(rs)
	desired, maxReplicas := *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)
	if from == replicas && !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return rs, nil
	}
	scaled := rs.DeepCopy()
	scaled.Spec.Replicas = &replicas
	setReplicasAnnotations(scaled, desired, maxReplicas)
	updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, scaled, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("scale replica set %s to %d: %w", rs.Name, replicas, err)
	}
	if from != replicas {
		direction := "up"
		if replicas < from {
			direction = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, reasonScaling, "Scaled %s replica set %s from %d to %d", direction, rs.Name, from, replicas)
	}
	return updated, nil
}
