package deployment

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// calculateStatus is d's status from its ReplicaSets: the counts, and the
// Available condition — True while at least replicas - maxUnavailable
// pods are available. Other conditions are carried over.
func calculateStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) appsv1.DeploymentStatus {
	available := availableReplicas(allRSs)
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualReplicas(allRSs),
		UpdatedReplicas:     actualReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: max(specReplicas(allRSs)-available, 0),
		TerminatingReplicas: terminatingReplicas(allRSs),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          slices.Clone(d.Status.Conditions),
	}
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, reasonMinAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, reasonMinUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// rolloutStatus is calculateStatus plus the rollout's Progressing
// condition and the ReplicaSets' ReplicaFailure. Progressing, while the
// rollout is not complete yet, becomes NewReplicaSetAvailable when it
// completes, ReplicaSetUpdated (with a new update time) whenever it made
// progress since the last status, and ProgressDeadlineExceeded once
// progressDeadlineSeconds pass without progress.
func rolloutStatus(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) appsv1.DeploymentStatus {
	status := calculateStatus(d, allRSs, newRS, now)
	if !hasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	settled := status.Replicas == status.UpdatedReplicas && cur != nil && cur.Reason == reasonNewRSAvailable
	if hasProgressDeadline(d) && !settled {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &status):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSAvailable, subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &status):
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonRSUpdated, subject+" is progressing.", now)
			if cur != nil {
				// Same reason, new update time: replace, not set.
				if cur.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			setCondition(&status, cond)
		case deploymentTimedOut(d, &status, now):
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonTimedOut, subject+" has timed out progressing.", now))
		}
	}
	if failure, ok := replicaFailure(allRSs, newRS); ok {
		setCondition(&status, failure)
	} else {
		removeCondition(&status, appsv1.DeploymentReplicaFailure)
	}
	return status
}

// deploymentComplete: every pod is updated and available, none is old,
// and the current generation has been observed.
func deploymentComplete(d *appsv1.Deployment, status *appsv1.DeploymentStatus) bool {
	want := *d.Spec.Replicas
	return status.UpdatedReplicas == want && status.Replicas == want && status.AvailableReplicas == want &&
		status.ObservedGeneration >= d.Generation
}

// deploymentProgressing: compared with d's current status, more pods are
// updated, ready or available, or fewer are old.
func deploymentProgressing(d *appsv1.Deployment, status *appsv1.DeploymentStatus) bool {
	was := d.Status
	return status.UpdatedReplicas > was.UpdatedReplicas ||
		status.Replicas-status.UpdatedReplicas < was.Replicas-was.UpdatedReplicas ||
		status.ReadyReplicas > was.ReadyReplicas ||
		status.AvailableReplicas > was.AvailableReplicas
}

// deploymentTimedOut: progressDeadlineSeconds have passed since the
// Progressing condition was last updated (progress, a new ReplicaSet, a
// resume), or the timeout is reported already. A completed rollout never
// times out.
func deploymentTimedOut(d *appsv1.Deployment, status *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	cond := getCondition(*status, appsv1.DeploymentProgressing)
	switch {
	case cond == nil, cond.Reason == reasonNewRSAvailable:
		return false
	case cond.Reason == reasonTimedOut:
		return true
	}
	return cond.LastUpdateTime.Add(progressDeadline(d)).Before(now)
}

func progressDeadline(d *appsv1.Deployment) time.Duration {
	return time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
}

// progressCheckAfter is when to look at an unchanged rollout again to
// see whether it has timed out: a second after the deadline of its last
// progress. ok is false when no deadline is running: no deadline at all,
// no Progressing condition, the rollout complete or timed out already.
func progressCheckAfter(d *appsv1.Deployment, status appsv1.DeploymentStatus, now time.Time) (time.Duration, bool) {
	cond := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cond == nil || deploymentComplete(d, &status) {
		return 0, false
	}
	if cond.Reason == reasonTimedOut || cond.Reason == reasonNewRSAvailable {
		return 0, false
	}
	after := cond.LastUpdateTime.Add(progressDeadline(d)).Sub(now)
	return max(after, 0) + time.Second, true
}

// syncStatus writes the counts and the Available condition, if changed.
func (c *Controller) syncStatus(ctx context.Context, d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	status := calculateStatus(d, allRSs, newRS, c.now())
	if reflect.DeepEqual(d.Status, status) {
		return nil
	}
	d.Status = status
	return c.updateStatus(ctx, d)
}

// syncRolloutStatus writes the rollout's status, if changed; if not, and
// a progress deadline is running, it looks again when it would pass.
func (c *Controller) syncRolloutStatus(ctx context.Context, d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	now := c.now()
	status := rolloutStatus(d, allRSs, newRS, now)
	if !reflect.DeepEqual(d.Status, status) {
		d.Status = status
		return c.updateStatus(ctx, d)
	}
	if after, ok := progressCheckAfter(d, status, now); ok {
		c.queue.AddAfter(d.Namespace+"/"+d.Name, after)
	}
	return nil
}

// updateStatus writes d.Status through the status subresource and takes
// over the new resourceVersion, so that later writes of this sync do not
// conflict with it.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update deployment status: %w", err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}
