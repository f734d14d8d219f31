package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// errGone is returned by get when the object is not there, or another
// object holds its name.
var errGone = errors.New("object is gone")

// attemptToDelete looks at one object: a virtual node is verified; an
// owner deleting in the foreground loses its finalizer once nothing
// blocks it; any other object is deleted, or loses references, as decide
// plans from the live state of its owners.
func (c *Controller) attemptToDelete(ctx context.Context, key string) error {
	uid := types.UID(key)
	n, ok := c.graph.get(uid)
	if !ok {
		return nil
	}
	if !n.observed {
		return c.verifyAbsent(ctx, n)
	}
	if n.deleting && !n.deletingDependents {
		return nil // on its way out; its dependents are looked at when it is gone
	}
	latest, err := c.get(ctx, n.gvr, n.id)
	if errors.Is(err, errGone) {
		c.enqueue(c.graph.remove(uid))
		return nil
	}
	if err != nil {
		return err
	}
	if latest.GetDeletionTimestamp() != nil && slices.Contains(latest.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return c.processDeletingDependents(ctx, n, latest)
	}
	refs := latest.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	owners := make([]owner, 0, len(refs))
	for _, ref := range refs {
		state, err := c.ownerState(ctx, ref, latest.GetNamespace())
		if err != nil {
			return err
		}
		owners = append(owners, owner{ref: ref, state: state})
	}
	deps := n.dependents
	dependentDeleting := slices.ContainsFunc(deps, func(d dependent) bool { return d.deletingDependents })
	return c.carryOut(ctx, n, latest, decide(owners, latest.GetFinalizers(), len(deps) > 0, dependentDeleting))
}

// carryOut does what p says to latest, the live state of node n.
func (c *Controller) carryOut(ctx context.Context, n snapshot, latest *unstructured.Unstructured, p plan) error {
	switch {
	case len(p.removeRefs) > 0:
		slog.Info("garbage collector: removing references to gone owners", "object", describe(n.id), "owners", p.removeRefs)
		_, err := c.updateMeta(ctx, n.gvr, n.id, latest, "ownerReferences", func(u *unstructured.Unstructured) (any, bool) {
			return withoutRefs(u.GetOwnerReferences(), p.removeRefs), hasAnyRef(u, p.removeRefs)
		})
		return err
	case !p.delete:
		return nil
	case len(p.unblockRefs) > 0:
		patched, err := c.updateMeta(ctx, n.gvr, n.id, latest, "ownerReferences", func(u *unstructured.Unstructured) (any, bool) {
			return unblocked(u.GetOwnerReferences(), p.unblockRefs), true
		})
		if err != nil || patched == nil {
			return err
		}
		latest = patched
	}
	uid, rv := latest.GetUID(), latest.GetResourceVersion()
	err := c.resource(n.gvr, latest.GetNamespace()).Delete(ctx, latest.GetName(), metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &p.policy,
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete %s: %w", describe(n.id), err)
	}
	slog.Info("garbage collector: deleted object", "object", describe(n.id), "propagationPolicy", p.policy)
	return nil
}

// processDeletingDependents drops the foregroundDeletion finalizer of an
// owner once no dependent blocks it, and otherwise makes sure its
// blocking dependents are being deleted. Their deletion wakes the owner.
func (c *Controller) processDeletingDependents(ctx context.Context, n snapshot, latest *unstructured.Unstructured) error {
	blocking := n.blocking()
	if len(blocking) == 0 {
		slog.Info("garbage collector: dependents gone, removing foregroundDeletion", "object", describe(n.id))
		return c.removeFinalizer(ctx, n, latest, metav1.FinalizerDeleteDependents)
	}
	for _, d := range blocking {
		if !d.deletingDependents {
			c.deleteQueue.Add(string(d.id.UID))
		}
	}
	return nil
}

// attemptToOrphan removes the references to an owner being deleted with
// the orphan finalizer from its dependents, then the finalizer.
func (c *Controller) attemptToOrphan(ctx context.Context, key string) error {
	n, ok := c.graph.get(types.UID(key))
	if !ok || !n.observed {
		return nil
	}
	latest, err := c.get(ctx, n.gvr, n.id)
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return err
	}
	if latest.GetDeletionTimestamp() == nil || !slices.Contains(latest.GetFinalizers(), metav1.FinalizerOrphanDependents) {
		return nil
	}
	var errs []error
	for _, d := range n.dependents {
		errs = append(errs, c.removeReference(ctx, d, n.id.UID))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	slog.Info("garbage collector: dependents orphaned, removing orphan finalizer", "object", describe(n.id), "dependents", len(n.dependents))
	return c.removeFinalizer(ctx, n, latest, metav1.FinalizerOrphanDependents)
}

// removeReference drops d's reference to owner, if it still has one.
func (c *Controller) removeReference(ctx context.Context, d dependent, owner types.UID) error {
	_, err := c.updateMeta(ctx, d.gvr, d.id, nil, "ownerReferences", func(u *unstructured.Unstructured) (any, bool) {
		return withoutRefs(u.GetOwnerReferences(), []types.UID{owner}), hasAnyRef(u, []types.UID{owner})
	})
	return err
}

// removeFinalizer drops finalizer f from the owner n.
func (c *Controller) removeFinalizer(ctx context.Context, n snapshot, latest *unstructured.Unstructured, f string) error {
	_, err := c.updateMeta(ctx, n.gvr, n.id, latest, "finalizers", func(u *unstructured.Unstructured) (any, bool) {
		return withoutFinalizer(u.GetFinalizers(), f), slices.Contains(u.GetFinalizers(), f)
	})
	return err
}

func hasAnyRef(u *unstructured.Unstructured, uids []types.UID) bool {
	return slices.ContainsFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
}

// ownerState looks an owner up on the API server (unless it is known to
// be gone). A namespaced owner is looked for in its dependent's namespace.
func (c *Controller) ownerState(ctx context.Context, ref metav1.OwnerReference, namespace string) (ownerState, error) {
	gvr, id, err := c.resourceFor(ownerIdentity(ref, namespace))
	if err != nil {
		return 0, err
	}
	key := keyFor(id)
	if _, ok := c.absent.Get(key); ok {
		return dangling, nil
	}
	owner, err := c.get(ctx, gvr, id)
	switch {
	case errors.Is(err, errGone):
		c.absent.Add(key, struct{}{})
		return dangling, nil
	case err != nil:
		return 0, err
	case owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents):
		return waiting, nil
	}
	return solid, nil
}

// verifyAbsent looks for an owner only known from references; if it does
// not exist its dependents are looked at. If it does, the informer of its
// resource will show it.
func (c *Controller) verifyAbsent(ctx context.Context, n snapshot) error {
	gvr, id, err := c.resourceFor(n.id)
	if err != nil {
		return err
	}
	_, err = c.get(ctx, gvr, id)
	if errors.Is(err, errGone) {
		c.absent.Add(keyFor(id), struct{}{})
		c.enqueue(c.graph.remove(n.id.UID))
		return nil
	}
	return err
}

// get fetches the live object id names, or errGone.
func (c *Controller) get(ctx context.Context, gvr schema.GroupVersionResource, id identity) (*unstructured.Unstructured, error) {
	obj, err := c.resource(gvr, id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && obj.GetUID() != id.UID) {
		return nil, errGone
	}
	return obj, err
}

// updateMeta sets one metadata list field of the object id names to what
// compute makes of its live state (latest, if given, is tried first),
// with a JSON merge patch carrying the live resourceVersion; a conflict
// is retried at once on a fresh copy, as kube's garbage collector does.
// compute reports whether a change is needed at all. It returns the
// patched object, or nil when nothing was patched.
func (c *Controller) updateMeta(ctx context.Context, gvr schema.GroupVersionResource, id identity, latest *unstructured.Unstructured,
	field string, compute func(*unstructured.Unstructured) (any, bool)) (*unstructured.Unstructured, error) {
	var patched *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := latest
		latest = nil
		if cur == nil {
			var err error
			if cur, err = c.get(ctx, gvr, id); err != nil {
				return err
			}
		}
		value, needed := compute(cur)
		if !needed {
			return nil
		}
		var err error
		patched, err = c.patchMeta(ctx, gvr, cur, field, value)
		return err
	})
	if errors.Is(err, errGone) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("patch %s of %s: %w", field, describe(id), err)
	}
	return patched, nil
}

// patchMeta patches one metadata field of cur, guarded by its
// resourceVersion. An empty list removes the field.
func (c *Controller) patchMeta(ctx context.Context, gvr schema.GroupVersionResource, cur *unstructured.Unstructured, field string, value any) (*unstructured.Unstructured, error) {
	if v, ok := value.([]metav1.OwnerReference); ok && len(v) == 0 {
		value = nil
	}
	if v, ok := value.([]string); ok && len(v) == 0 {
		value = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{field: value, "resourceVersion": cur.GetResourceVersion()}})
	if err != nil {
		return nil, err
	}
	return c.resource(gvr, cur.GetNamespace()).Patch(ctx, cur.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
}

func (c *Controller) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return c.dynamic.Resource(gvr)
	}
	return c.dynamic.Resource(gvr).Namespace(namespace)
}

func describe(id identity) string {
	if id.Namespace == "" {
		return fmt.Sprintf("%s %s", id.Kind, id.Name)
	}
	return fmt.Sprintf("%s %s/%s", id.Kind, id.Namespace, id.Name)
}
