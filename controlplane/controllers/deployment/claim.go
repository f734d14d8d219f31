package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claim is what a Deployment does about one ReplicaSet of its namespace.
type claim int

const (
	claimIgnore  claim = iota // not ours, and not ours to take
	claimKeep                 // ours and matching
	claimAdopt                // a matching orphan: take it
	claimRelease              // ours but no longer matching: let it go
)

// decideClaim is the ownership rule of Kubernetes' ControllerRefManager:
// a ReplicaSet with a controller belongs to it alone; a Deployment being
// deleted neither adopts nor releases; ReplicaSets being deleted are not
// adopted.
func decideClaim(d *appsv1.Deployment, selector labels.Selector, rs *appsv1.ReplicaSet) claim {
	matches := selector.Matches(labels.Set(rs.Labels))
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		switch {
		case ref.UID != d.UID:
			return claimIgnore
		case matches:
			return claimKeep
		case d.DeletionTimestamp != nil:
			return claimIgnore
		}
		return claimRelease
	}
	if !matches || d.DeletionTimestamp != nil || rs.DeletionTimestamp != nil || rs.Namespace != d.Namespace {
		return claimIgnore
	}
	return claimAdopt
}

// claimReplicaSets adopts and releases ReplicaSets so that d owns exactly
// those it selects, and returns those it owns. Before the first adoption
// it reads d afresh from the API server, so that a Deployment deleted
// since the cache was filled adopts nothing. A ReplicaSet that is gone is
// no error.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	canAdopt := sync.OnceValue(func() error { return c.recheckNotDeleting(ctx, d) })
	var owned []*appsv1.ReplicaSet
	var errs []error
	var adoptErr error
	for _, rs := range all {
		switch decideClaim(d, selector, rs) {
		case claimKeep:
			owned = append(owned, rs)
		case claimRelease:
			if err := c.release(ctx, d, rs); err != nil {
				errs = append(errs, err)
			}
		case claimAdopt:
			if adoptErr = canAdopt(); adoptErr != nil {
				continue
			}
			adopted, err := c.adopt(ctx, d, rs)
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

// recheckNotDeleting reads d afresh and fails if it has been deleted,
// replaced or is being deleted.
func (c *Controller) recheckNotDeleting(ctx context.Context, d *appsv1.Deployment) error {
	fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("recheck deployment before adopting: %w", err)
	}
	if fresh.UID != d.UID {
		return fmt.Errorf("deployment %s/%s is gone: uid %s, want %s", d.Namespace, d.Name, fresh.UID, d.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("deployment %s/%s is being deleted, cannot adopt replica sets", d.Namespace, d.Name)
	}
	return nil
}

// adopt makes d the controller of an orphan.
func (c *Controller) adopt(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	adopted, err := c.patchReplicaSet(ctx, rs, adoptPatch(d, rs.UID))
	if err != nil {
		return nil, fmt.Errorf("adopt replica set %s: %w", rs.Name, err)
	}
	return adopted, nil
}

// release removes d's ownerReference from rs. A ReplicaSet that is gone or
// no longer refers to d (the API server refuses the patch as invalid) is
// released already.
func (c *Controller) release(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet) error {
	_, err := c.patchReplicaSet(ctx, rs, releasePatch(d.UID, rs.UID))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("release replica set %s: %w", rs.Name, err)
	}
	return nil
}

func (c *Controller) patchReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, patch []byte) (*appsv1.ReplicaSet, error) {
	return c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
}

// adoptPatch is the strategic merge patch that makes d the controller of
// the ReplicaSet with uid rsUID (controller and blockOwnerDeletion set).
// The uid makes the API server refuse the patch if the name now belongs to
// another ReplicaSet.
func adoptPatch(d *appsv1.Deployment, rsUID types.UID) []byte {
	return mustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
		"uid":             rsUID,
	}})
}

// releasePatch is the strategic merge patch that deletes the
// ownerReference to dUID from the ReplicaSet with uid rsUID.
func releasePatch(dUID, rsUID types.UID) []byte {
	return mustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": dUID}},
		"uid":             rsUID,
	}})
}

// mustJSON marshals values made of maps, strings and API types, which
// cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
