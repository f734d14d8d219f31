package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Claim is what an owner (a ReplicaSet, a Deployment) does about one
// object of its namespace that it might control (a pod, a ReplicaSet).
type Claim int

const (
	ClaimIgnore  Claim = iota // not ours, and not ours to take
	ClaimKeep                 // ours and matching
	ClaimAdopt                // a matching orphan: take it
	ClaimRelease              // ours but no longer matching: let it go
)

// DecideClaim is the ownership rule of Kubernetes' ControllerRefManager:
// an object with a controller belongs to it alone; an owner being deleted
// neither adopts nor releases; objects being deleted are not adopted.
func DecideClaim(owner metav1.Object, selector labels.Selector, obj metav1.Object) Claim {
	matches := selector.Matches(labels.Set(obj.GetLabels()))
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch {
		case ref.UID != owner.GetUID():
			return ClaimIgnore
		case matches:
			return ClaimKeep
		case owner.GetDeletionTimestamp() != nil:
			return ClaimIgnore
		}
		return ClaimRelease
	}
	if !matches || owner.GetDeletionTimestamp() != nil || obj.GetDeletionTimestamp() != nil || obj.GetNamespace() != owner.GetNamespace() {
		return ClaimIgnore
	}
	return ClaimAdopt
}

// Claimer adopts and releases objects of one kind for one owner.
type Claimer[T metav1.Object] struct {
	Owner     metav1.Object
	OwnerKind schema.GroupVersionKind
	Selector  labels.Selector
	// OwnerNoun and Noun name the owner's and the objects' kind in errors
	// ("replicaset", "pod").
	OwnerNoun, Noun string
	// Get reads the owner afresh from the API server.
	Get func(ctx context.Context) (metav1.Object, error)
	// Patch applies a strategic merge patch to obj.
	Patch func(ctx context.Context, obj T, patch []byte) (T, error)
}

// Claim adopts and releases objs so that the owner controls exactly those
// the selector matches, and returns those it controls. Before the first
// adoption it reads the owner afresh from the API server, so that an
// owner deleted since the cache was filled adopts nothing. An object that
// is gone is no error.
func (c Claimer[T]) Claim(ctx context.Context, objs []T) ([]T, error) {
	canAdopt := sync.OnceValue(func() error { return c.recheckNotDeleting(ctx) })
	var owned []T
	var errs []error
	var adoptErr error
	for _, obj := range objs {
		switch DecideClaim(c.Owner, c.Selector, obj) {
		case ClaimKeep:
			owned = append(owned, obj)
		case ClaimRelease:
			if err := c.release(ctx, obj); err != nil {
				errs = append(errs, err)
			}
		case ClaimAdopt:
			if adoptErr = canAdopt(); adoptErr != nil {
				continue
			}
			adopted, err := c.adopt(ctx, obj)
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

// recheckNotDeleting reads the owner afresh and fails if it has been
// deleted, replaced or is being deleted.
func (c Claimer[T]) recheckNotDeleting(ctx context.Context) error {
	o := c.Owner
	fresh, err := c.Get(ctx)
	if err != nil {
		return fmt.Errorf("recheck %s before adopting: %w", c.OwnerNoun, err)
	}
	if fresh.GetUID() != o.GetUID() {
		return fmt.Errorf("%s %s/%s is gone: uid %s, want %s", c.OwnerNoun, o.GetNamespace(), o.GetName(), fresh.GetUID(), o.GetUID())
	}
	if fresh.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s %s/%s is being deleted, cannot adopt %ss", c.OwnerNoun, o.GetNamespace(), o.GetName(), c.Noun)
	}
	return nil
}

// adopt makes the owner the controller of an orphan.
func (c Claimer[T]) adopt(ctx context.Context, obj T) (T, error) {
	adopted, err := c.Patch(ctx, obj, AdoptPatch(c.Owner, c.OwnerKind, obj.GetUID()))
	if err != nil {
		var zero T
		return zero, fmt.Errorf("adopt %s %s: %w", c.Noun, obj.GetName(), err)
	}
	return adopted, nil
}

// release removes the owner's ownerReference from obj. An object that is
// gone or no longer refers to the owner (the API server refuses the patch
// as invalid) is released already.
func (c Claimer[T]) release(ctx context.Context, obj T) error {
	_, err := c.Patch(ctx, obj, ReleasePatch(c.Owner.GetUID(), obj.GetUID()))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("release %s %s: %w", c.Noun, obj.GetName(), err)
	}
	return nil
}

// AdoptPatch is the strategic merge patch that makes owner, of kind
// ownerKind, the controller (blockOwnerDeletion set) of the object with
// uid objUID. The uid makes the API server refuse the patch if the name
// now belongs to another object.
func AdoptPatch(owner metav1.Object, ownerKind schema.GroupVersionKind, objUID types.UID) []byte {
	return MustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*metav1.NewControllerRef(owner, ownerKind)},
		"uid":             objUID,
	}})
}

// ReleasePatch is the strategic merge patch that deletes the
// ownerReference to ownerUID from the object with uid objUID.
func ReleasePatch(ownerUID, objUID types.UID) []byte {
	return MustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": ownerUID}},
		"uid":             objUID,
	}})
}

// MustJSON marshals values made of maps, strings and API types, which
// cannot fail.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
