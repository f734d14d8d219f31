package replicaset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claim is what a ReplicaSet does about one active pod of its namespace.
type claim int

const (
	claimIgnore  claim = iota // not ours, and not ours to take
	claimKeep                 // ours and matching
	claimAdopt                // a matching orphan: take it
	claimRelease              // ours but no longer matching: let it go
)

// decideClaim is the ownership rule of Kubernetes' ControllerRefManager:
// a pod with a controller belongs to it alone; a ReplicaSet being deleted
// neither adopts nor releases; pods being deleted are not adopted.
func decideClaim(rs *appsv1.ReplicaSet, selector labels.Selector, pod *corev1.Pod) claim {
	matches := selector.Matches(labels.Set(pod.Labels))
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		switch {
		case ref.UID != rs.UID:
			return claimIgnore
		case matches:
			return claimKeep
		case rs.DeletionTimestamp != nil:
			return claimIgnore
		}
		return claimRelease
	}
	if !matches || rs.DeletionTimestamp != nil || pod.DeletionTimestamp != nil || pod.Namespace != rs.Namespace {
		return claimIgnore
	}
	return claimAdopt
}

// claimPods adopts and releases pods so that the ReplicaSet owns exactly
// the pods it selects, and returns those it owns. Before the first
// adoption it re-reads the ReplicaSet from the API server, so that a
// ReplicaSet deleted since the cache was filled adopts nothing. A pod that
// is gone is no error.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	canAdopt := sync.OnceValue(func() error { return c.recheckNotDeleting(ctx, rs) })
	var owned []*corev1.Pod
	var errs []error
	var adoptErr error
	for _, pod := range pods {
		switch decideClaim(rs, selector, pod) {
		case claimKeep:
			owned = append(owned, pod)
		case claimRelease:
			if err := c.releasePod(ctx, rs, pod); err != nil {
				errs = append(errs, err)
			}
		case claimAdopt:
			if adoptErr = canAdopt(); adoptErr != nil {
				continue
			}
			adopted, err := c.adoptPod(ctx, rs, pod)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs = append(errs, err)
			default:
				owned = append(owned, adopted)
			}
		}
	}
	return owned, errors.Join(append(errs, adoptErr)...)
}

// recheckNotDeleting reads rs afresh and fails if it has been deleted,
// replaced or is being deleted.
func (c *Controller) recheckNotDeleting(ctx context.Context, rs *appsv1.ReplicaSet) error {
	fresh, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("recheck replicaset before adopting: %w", err)
	}
	if fresh.UID != rs.UID {
		return fmt.Errorf("replicaset %s/%s is gone: uid %s, want %s", rs.Namespace, rs.Name, fresh.UID, rs.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("replicaset %s/%s is being deleted, cannot adopt pods", rs.Namespace, rs.Name)
	}
	return nil
}

// adoptPod makes rs the controller of an orphan.
func (c *Controller) adoptPod(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) (*corev1.Pod, error) {
	patch, err := adoptPatch(rs, pod.UID)
	if err != nil {
		return nil, err
	}
	adopted, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("adopt pod %s: %w", pod.Name, err)
	}
	return adopted, nil
}

// releasePod removes rs's ownerReference from a pod. A pod that is gone or
// no longer refers to rs (the API server refuses the patch as invalid) is
// released already.
func (c *Controller) releasePod(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	patch, err := releasePatch(rs.UID, pod.UID)
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("release pod %s: %w", pod.Name, err)
	}
	return nil
}

// adoptPatch is the strategic merge patch that adds rs as controller of
// the pod with uid podUID. The uid makes the API server refuse the patch
// if the name now belongs to another pod.
func adoptPatch(rs *appsv1.ReplicaSet, podUID types.UID) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(rs, controllerKind)},
		"uid":             podUID,
	}})
}

// releasePatch is the strategic merge patch that deletes the
// ownerReference to rsUID from the pod with uid podUID.
func releasePatch(rsUID, podUID types.UID) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": rsUID}},
		"uid":             podUID,
	}})
}
