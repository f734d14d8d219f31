package replicaset

import (
	"context"
	"time"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Reasons of events and of the ReplicaFailure condition.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

// calculateStatus is rs's status given its active pods, its terminating
// pods and the error of this sync's creates or deletes, at now.
//
// replicas counts the active pods, fullyLabeledReplicas those whose labels
// include all the template's, readyReplicas those Ready, availableReplicas
// those ready for minReadySeconds. ReplicaFailure is set (once, keeping its
// first transition time) while creates or deletes fail, and removed by the
// first sync without an error.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	template := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var fullyLabeled, ready, available int32
	for _, pod := range active {
		if template.Matches(labels.Set(pod.Labels)) {
			fullyLabeled++
		}
		if controllers.IsPodReady(pod) {
			ready++
		}
		if controllers.IsPodAvailable(pod, rs.Spec.MinReadySeconds, now) {
			available++
		}
	}
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = new(int32(len(terminating)))
	status.ObservedGeneration = rs.Generation

	failed := findCondition(status.Conditions, appsv1.ReplicaSetReplicaFailure) != nil
	switch {
	case manageErr != nil && !failed:
		reason := reasonFailedCreate
		if len(active) > int(desiredReplicas(rs)) {
			reason = reasonFailedDelete
		}
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			Reason:             reason,
			Message:            manageErr.Error(),
			LastTransitionTime: metav1.NewTime(now),
		})
	case manageErr == nil && failed:
		status.Conditions = withoutCondition(status.Conditions, appsv1.ReplicaSetReplicaFailure)
	}
	return status
}

// nextAvailable is how long after now the first of active's ready pods
// that is not available yet becomes available; ok is false when none will.
func nextAvailable(active []*corev1.Pod, minReadySeconds int32, now time.Time) (d time.Duration, ok bool) {
	if minReadySeconds == 0 {
		return 0, false
	}
	for _, pod := range active {
		at, will := controllers.AvailableAt(pod, minReadySeconds)
		if !will || !now.Before(at) {
			continue
		}
		if wait := at.Sub(now); !ok || wait < d {
			d, ok = wait, true
		}
	}
	return d, ok
}

func findCondition(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func withoutCondition(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// statusRetries is how many times a conflicting status write is retried
// on a fresh copy within one sync.
const statusRetries = 1

// updateStatus writes status to rs through the status subresource, unless
// it is what rs already has.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) error {
	if equality.Semantic.DeepEqual(rs.Status, status) {
		return nil
	}
	rs = rs.DeepCopy()
	for attempt := 0; ; attempt++ {
		rs.Status = status
		_, err := c.objects.UpdateStatus(ctx, rs)
		if err == nil || attempt == statusRetries || !apierrors.IsConflict(err) {
			return err
		}
		fresh, err := c.objects.GetLive(ctx, rs.Namespace, rs.Name)
		if err != nil {
			return err
		}
		if fresh.UID != rs.UID {
			return nil // replaced; the new one gets its own sync
		}
		rs = fresh
	}
}

// desiredReplicas is spec.replicas, 1 when unset (the API server's default).
func desiredReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}
