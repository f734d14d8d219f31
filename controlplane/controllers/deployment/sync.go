package deployment

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
)

// sync is the workers' SyncFunc. A conflict means a write was based on a
// stale cache: the informer brings the newer object and the retry works
// from it, so it is reported as component.ErrWaiting, not as a failure.
func (c *Controller) sync(ctx context.Context, key string) error {
	err := c.syncDeployment(ctx, key)
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %w", component.ErrWaiting, err)
	}
	return err
}

// syncDeployment brings the Deployment key one step closer to its spec,
// in the order kube-controller-manager follows: claim ReplicaSets; the
// paused condition follows spec.paused; the new ReplicaSet (if any) and
// the Deployment get their revisions; a Deployment being deleted only
// gets its status written; a paused Deployment, or one whose
// spec.replicas changed, is only scaled; else its strategy takes a step.
func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	cached, err := c.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() {
		// The API server validates selectors; retrying cannot help.
		slog.Error("deployment selector", "namespace", namespace, "deployment", name, "err", err)
		return nil
	}
	rss, err := c.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp == nil {
		if err := c.checkPausedCondition(ctx, d); err != nil {
			return err
		}
	}
	newRS, oldRSs, err := c.syncRevisions(ctx, d, rss)
	if err != nil {
		return err
	}
	switch {
	case d.DeletionTimestamp != nil:
		return c.syncStatus(ctx, d, withNew(oldRSs, newRS), newRS)
	case d.Spec.Paused, isScalingEvent(d, newRS, oldRSs):
		return c.syncScale(ctx, d, newRS, oldRSs)
	case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return c.rolloutRecreate(ctx, d, newRS, oldRSs)
	}
	return c.rolloutRolling(ctx, d, newRS, oldRSs)
}

// checkPausedCondition writes the Progressing condition for a pause or
// resume, so that a paused time is not taken for lack of progress.
func (c *Controller) checkPausedCondition(ctx context.Context, d *appsv1.Deployment) error {
	cond, ok := pausedCondition(d, c.now())
	if !ok {
		return nil
	}
	setCondition(&d.Status, cond)
	return c.updateStatus(ctx, d)
}

// syncRevisions splits d's ReplicaSets into the new one (nil if none has
// d's template) and the old ones. An existing new ReplicaSet gets the
// Deployment's annotations, revision max(old revisions)+1 if it had a
// lower one (a rollback), and d's minReadySeconds; once it has them, d
// gets its revision, and the FoundNewReplicaSet condition if it has no
// Progressing condition yet.
func (c *Controller) syncRevisions(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	newRS := findNewReplicaSet(d, rss)
	oldRSs := oldReplicaSets(rss, newRS)
	if newRS == nil {
		return nil, oldRSs, nil
	}
	rs := newRS.DeepCopy()
	if setNewReplicaSetAnnotations(d, rs, maxRevision(oldRSs)+1, true) || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
		rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("update new replica set %s: %w", rs.Name, err)
		}
		return updated, oldRSs, nil
	}
	if err := c.setRevision(ctx, d, rs.Annotations[revisionAnnotation]); err != nil {
		return nil, nil, err
	}
	if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
		msg := fmt.Sprintf("Found new replica set %q", rs.Name)
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonFoundNewRS, msg, c.now()))
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, nil, err
		}
	}
	return rs, oldRSs, nil
}

// setRevision records rev in d's revision annotation, if it differs. The
// API server takes metadata changes through the main resource only, so
// this is a merge patch of that one annotation, conditional on d's
// resourceVersion (a Deployment changed since it was read is synced again
// from the newer copy); d takes over the new resourceVersion.
func (c *Controller) setRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if rev == "" || d.Annotations[revisionAnnotation] == rev {
		return nil
	}
	patch := controllers.MustJSON(map[string]any{"metadata": map[string]any{
		"annotations":     map[string]string{revisionAnnotation: rev},
		"resourceVersion": d.ResourceVersion,
	}})
	patched, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("set deployment revision %s: %w", rev, err)
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[revisionAnnotation] = rev
	d.ResourceVersion = patched.ResourceVersion
	return nil
}
