package endpoints

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// managedByLabel marks the Endpoints this controller writes, as
	// kube-controller-manager's endpoint controller does.
	managedByLabel = "endpoints.kubernetes.io/managed-by"
	managedBy      = "endpoint-controller"
	// maxAddresses is how many addresses one Endpoints holds at most;
	// beyond it the controller truncates and says so in an annotation.
	maxAddresses = 1000
	truncated    = "truncated"
)

// plan returns the Endpoints svc should have, given the subsets computed
// for it, the time of the latest change they reflect and current, the
// Endpoints there now (nil when there is none), and whether it must be
// written. Only subsets, labels and truncation cause a write: an unchanged
// result writes nothing, whatever the trigger time.
func plan(svc *corev1.Service, current *corev1.Endpoints, subsets []corev1.EndpointSubset, trigger time.Time) (*corev1.Endpoints, bool) {
	subsets, cut := truncate(subsets)
	labels := labelsFor(svc)
	if current != nil && apiequality.Semantic.DeepEqual(current.Subsets, subsets) &&
		apiequality.Semantic.DeepEqual(current.Labels, labels) && capacityNoted(current, cut) {
		return current, false
	}
	want := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace}}
	if current != nil {
		want = current.DeepCopy()
	}
	want.Subsets, want.Labels = subsets, labels
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	setOrDelete(want.Annotations, corev1.EndpointsLastChangeTriggerTime, trigger.UTC().Format(time.RFC3339Nano), !trigger.IsZero())
	setOrDelete(want.Annotations, corev1.EndpointsOverCapacity, truncated, cut)
	return want, true
}

// capacityNoted reports whether ep's over-capacity annotation says what
// cut does: "truncated" when addresses were dropped, absent otherwise.
func capacityNoted(ep *corev1.Endpoints, cut bool) bool {
	v, ok := ep.Annotations[corev1.EndpointsOverCapacity]
	if cut {
		return v == truncated
	}
	return !ok
}

func setOrDelete(m map[string]string, key, value string, set bool) {
	if set {
		m[key] = value
	} else {
		delete(m, key)
	}
}

// labelsFor returns the service's labels, plus the managed-by label and,
// for a headless service, the headless label.
func labelsFor(svc *corev1.Service) map[string]string {
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedBy
	setOrDelete(labels, corev1.IsHeadlessService, "", !clusterIPSet(svc))
	return labels
}

// triggerTime is when the latest change reflected in svc's Endpoints
// happened: the service's creation or a pod's last readiness transition
// (its creation, when it has none yet).
func triggerTime(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	latest := svc.CreationTimestamp.Time
	for _, pod := range pods {
		t := pod.CreationTimestamp.Time
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && !c.LastTransitionTime.IsZero() {
				t = c.LastTransitionTime.Time
			}
		}
		if t.After(latest) {
			latest = t
		}
	}
	return latest
}

// truncate keeps at most maxAddresses addresses, ready ones first: when
// there are too many, not-ready addresses go first; when the ready ones
// alone are too many, all not-ready ones go and the ready ones are cut.
// Each subset keeps a share of the room in proportion to its size. cut
// reports whether anything was dropped. subsets is not modified.
func truncate(subsets []corev1.EndpointSubset) (out []corev1.EndpointSubset, cut bool) {
	ready, notReady := 0, 0
	for _, ss := range subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	if ready+notReady <= maxAddresses {
		return subsets, false
	}
	cutReady := ready > maxAddresses
	room, total := maxAddresses-ready, notReady
	if cutReady {
		room, total = maxAddresses, ready
	}
	out = make([]corev1.EndpointSubset, len(subsets))
	left := room
	for i, ss := range subsets {
		out[i] = ss
		if cutReady {
			n := min(share(len(ss.Addresses), total, room), left)
			out[i].Addresses, out[i].NotReadyAddresses = ss.Addresses[:n], nil
			left -= n
			continue
		}
		n := min(share(len(ss.NotReadyAddresses), total, room), left)
		out[i].NotReadyAddresses = ss.NotReadyAddresses[:n]
		left -= n
	}
	return out, true
}

// share is part's proportional share of room, rounded up, at most part.
func share(part, total, room int) int {
	if total == 0 {
		return 0
	}
	return min(part, (part*room+total-1)/total)
}
