package deployment

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/component"
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
