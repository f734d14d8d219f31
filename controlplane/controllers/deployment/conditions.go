package deployment

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the Deployment conditions and events, as
// kube-controller-manager writes them (kubectl rollout status looks for
// reasonTimedOut).
const (
	// Progressing.
	reasonNewRSCreated   = "NewReplicaSetCreated"
	reasonFoundNewRS     = "FoundNewReplicaSet"
	reasonRSUpdated      = "ReplicaSetUpdated"
	reasonNewRSAvailable = "NewReplicaSetAvailable"
	reasonTimedOut       = "ProgressDeadlineExceeded"
	reasonPaused         = "DeploymentPaused"
	reasonResumed        = "DeploymentResumed"
	reasonFailedRSCreate = "ReplicaSetCreateError"
	// Available.
	reasonMinAvailable   = "MinimumReplicasAvailable"
	reasonMinUnavailable = "MinimumReplicasUnavailable"
	// Events.
	reasonScaling = "ScalingReplicaSet"
)

func newCondition(typ appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	t := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: typ, Status: status, Reason: reason, Message: message, LastUpdateTime: t, LastTransitionTime: t}
}

// getCondition returns the status's condition of type typ, or nil.
func getCondition(status appsv1.DeploymentStatus, typ appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == typ {
			return &status.Conditions[i]
		}
	}
	return nil
}

// setCondition puts cond in the status unless a condition of its type
// with the same status and reason is there already. The transition time
// is kept while the status stays the same.
func setCondition(status *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition) {
	cur := getCondition(*status, cond.Type)
	if cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		return
	}
	if cur != nil && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(status, cond.Type)
	status.Conditions = append(status.Conditions, cond)
}

func removeCondition(status *appsv1.DeploymentStatus, typ appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range status.Conditions {
		if c.Type != typ {
			kept = append(kept, c)
		}
	}
	status.Conditions = kept
}

// pausedCondition is the Progressing condition to set when d was paused
// or resumed since its status was written, if any. A reported timeout
// stays.
func pausedCondition(d *appsv1.Deployment, now time.Time) (appsv1.DeploymentCondition, bool) {
	if !hasProgressDeadline(d) {
		return appsv1.DeploymentCondition{}, false
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == reasonTimedOut {
		return appsv1.DeploymentCondition{}, false
	}
	pausedBefore := cur != nil && cur.Reason == reasonPaused
	switch {
	case d.Spec.Paused && !pausedBefore:
		return newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, "Deployment is paused", now), true
	case !d.Spec.Paused && pausedBefore:
		return newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonResumed, "Deployment is resumed", now), true
	}
	return appsv1.DeploymentCondition{}, false
}

// replicaFailure is the ReplicaFailure condition to report: the new
// ReplicaSet's, else the first old one's; ok is false when none has one.
func replicaFailure(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (appsv1.DeploymentCondition, bool) {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, allRSs...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return appsv1.DeploymentCondition{
					Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
				}, true
			}
		}
	}
	return appsv1.DeploymentCondition{}, false
}
