package deployment

import (
	"log/slog"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations a Deployment and its ReplicaSets carry, as
// kube-controller-manager writes them; kubectl rollout history and undo
// read them.
const (
	// revisionAnnotation numbers the rollouts: on a ReplicaSet, the
	// revision it last served; on the Deployment, its new ReplicaSet's.
	revisionAnnotation = "deployment.kubernetes.io/revision"
	// revisionHistoryAnnotation lists the earlier revisions a ReplicaSet
	// served, when a rollback made it new again.
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// desiredReplicasAnnotation is the Deployment's spec.replicas when the
	// ReplicaSet was last scaled; a difference marks a scaling event.
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// maxReplicasAnnotation is spec.replicas + maxSurge when the
	// ReplicaSet was last scaled, the base of proportional scaling.
	maxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// maxRevisionHistoryChars bounds revisionHistoryAnnotation.
	maxRevisionHistoryChars = 2000
)

// notCopied are the Deployment annotations its ReplicaSets do not inherit.
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	revisionAnnotation:                 true,
	revisionHistoryAnnotation:          true,
	desiredReplicasAnnotation:          true,
	maxReplicasAnnotation:              true,
	appsv1.DeprecatedRollbackTo:        true,
}

// revision is the object's revision annotation; 0 when it has none.
func revision(obj metav1.Object) (int64, error) {
	v, ok := obj.GetAnnotations()[revisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among the ReplicaSets.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range rss {
		v, err := revision(rs)
		if err != nil {
			slog.Warn("replica set revision", "namespace", rs.Namespace, "replicaset", rs.Name, "err", err)
			continue
		}
		highest = max(highest, v)
	}
	return highest
}

// setNewReplicaSetAnnotations brings the annotations of d's new ReplicaSet
// up to date and reports whether it changed any: the Deployment's own
// annotations are copied (change-cause among them); a lower revision is
// raised to newRevision, the one it replaces going to the revision
// history (the ReplicaSet is being rolled back to); a ReplicaSet about to
// be created (!exists) gets the replicas annotations.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	changed := copyAnnotations(d, rs)
	old, hadRevision := rs.Annotations[revisionAnnotation]
	oldRevision, err := strconv.ParseInt(old, 10, 64)
	if err != nil && old != "" {
		slog.Warn("replica set revision", "namespace", rs.Namespace, "replicaset", rs.Name, "err", err)
		return false
	}
	if oldRevision < newRevision {
		rs.Annotations[revisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if hadRevision {
			rs.Annotations[revisionHistoryAnnotation] = appendRevisionHistory(rs.Annotations[revisionHistoryAnnotation], old)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// copyAnnotations copies d's annotations, but those in notCopied, to rs.
func copyAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if cur, ok := rs.Annotations[k]; notCopied[k] || (ok && cur == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// appendRevisionHistory adds revision to a comma-separated history,
// dropping the oldest entries to stay within maxRevisionHistoryChars.
func appendRevisionHistory(history, revision string) string {
	if history == "" {
		return revision
	}
	entries := append(strings.Split(history, ","), revision)
	for len(entries) > 1 && len(strings.Join(entries, ",")) > maxRevisionHistoryChars {
		entries = entries[1:]
	}
	return strings.Join(entries, ",")
}

// setReplicasAnnotations records desired and max replicas on rs and
// reports whether that changed anything.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[desiredReplicasAnnotation] = strconv.Itoa(int(desired))
	rs.Annotations[maxReplicasAnnotation] = strconv.Itoa(int(maxReplicas))
	return true
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[desiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[maxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

// int32Annotation reads a numeric replicas annotation of rs.
func int32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		slog.Warn("replica set annotation", "namespace", rs.Namespace, "replicaset", rs.Name, "annotation", key, "err", err)
		return 0, false
	}
	return int32(n), true
}
