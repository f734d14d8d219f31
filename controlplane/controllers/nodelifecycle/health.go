package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons and messages the controller writes, as
// kube-controller-manager's node lifecycle controller does.
const (
	reasonStatusUnknown      = "NodeStatusUnknown"
	messageStatusUnknown     = "Kubelet stopped posting node status."
	reasonStatusNeverUpdated = "NodeStatusNeverUpdated"
	messageNeverUpdated      = "Kubelet never posted node status."
)

// monitoredConditions are the conditions a silent node gets as Unknown.
// NetworkUnavailable is left alone: the control plane owns it.
var monitoredConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// probe is what the controller has seen of one node's heartbeats. The
// times it compares are the node's own (a Ready condition's
// lastHeartbeatTime, a Lease's renewTime), but "when" a heartbeat arrived
// is always the controller's clock, so skew between the node and the
// control plane does not matter.
type probe struct {
	// at is when a heartbeat was last seen (probeTimestamp upstream).
	at time.Time
	// heartbeat is the Ready condition's lastHeartbeatTime seen last;
	// hadReady tells whether there was a Ready condition at all.
	heartbeat metav1.Time
	hadReady  bool
	// renew is the Lease's renewTime seen last; hadLease whether there was one.
	renew    time.Time
	hadLease bool
	// ready is the Ready status the controller last acted on (events,
	// pods marked not ready); empty before the first sync.
	ready corev1.ConditionStatus
}

// observe returns prev updated with what node and its Lease (nil if it has
// none) show at now. prev is nil the first time the controller sees the
// node: a node with a Ready condition then counts as heard from now; one
// that never posted status counts from its creation.
func observe(prev *probe, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) probe {
	ready := readyCondition(node)
	var p probe
	switch {
	case prev == nil && ready == nil:
		p.at = node.CreationTimestamp.Time
	case prev == nil:
		p.at = now
	default:
		p = *prev
		if ready != nil && (!p.hadReady || !ready.LastHeartbeatTime.Equal(&p.heartbeat)) || ready == nil && p.hadReady {
			p.at = now
		}
	}
	p.hadReady = ready != nil
	if ready != nil {
		p.heartbeat = ready.LastHeartbeatTime
	}
	if lease != nil {
		var renew time.Time
		if lease.Spec.RenewTime != nil {
			renew = lease.Spec.RenewTime.Time
		}
		if !p.hadLease || p.renew.Before(renew) {
			p.at = now
		}
		p.hadLease, p.renew = true, renew
	}
	return p
}

// deadline is when the node counts as silent if nothing more is heard: the
// startup grace period for a node that never posted a Ready condition, the
// monitor grace period otherwise.
func (p probe) deadline(monitorGrace, startupGrace time.Duration) time.Time {
	if !p.hadReady {
		return p.at.Add(startupGrace)
	}
	return p.at.Add(monitorGrace)
}

// markUnknown returns conditions with every monitored condition set to
// Unknown, as for a node that stopped reporting: existing ones keep their
// heartbeat and change reason, message and transition time (unless already
// Unknown); missing ones are added as never updated. changed reports
// whether anything differs from conditions, which is left untouched.
func markUnknown(conditions []corev1.NodeCondition, created metav1.Time, now time.Time) ([]corev1.NodeCondition, bool) {
	out := make([]corev1.NodeCondition, len(conditions))
	copy(out, conditions)
	changed := false
	ts := metav1.NewTime(now)
	for _, typ := range monitoredConditions {
		i := conditionIndex(out, typ)
		if i < 0 {
			out = append(out, corev1.NodeCondition{
				Type: typ, Status: corev1.ConditionUnknown, Reason: reasonStatusNeverUpdated, Message: messageNeverUpdated,
				LastHeartbeatTime: created, LastTransitionTime: ts,
			})
			changed = true
			continue
		}
		if out[i].Status == corev1.ConditionUnknown {
			continue
		}
		out[i].Status, out[i].Reason, out[i].Message, out[i].LastTransitionTime =
			corev1.ConditionUnknown, reasonStatusUnknown, messageStatusUnknown, ts
		changed = true
	}
	return out, changed
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	if i := conditionIndex(node.Status.Conditions, corev1.NodeReady); i >= 0 {
		return &node.Status.Conditions[i]
	}
	return nil
}

// readyStatus is the node's Ready status, Unknown when it has none.
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := readyCondition(node); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}

func conditionIndex(conditions []corev1.NodeCondition, typ corev1.NodeConditionType) int {
	for i := range conditions {
		if conditions[i].Type == typ {
			return i
		}
	}
	return -1
}
