package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// createNewReplicaSet creates the ReplicaSet for d's current template, at
// the size the strategy allows now and with revision max(old)+1, and
// gives d that revision and the NewReplicaSetCreated condition.
//
// A ReplicaSet of that name that d owns with the same template (created
// by an earlier sync the cache has not shown yet) is taken as it is.
// Any other holder of the name is a hash collision: d's collisionCount
// goes up, which changes the hash, and the sync is retried.
func (c *Controller) createNewReplicaSet(ctx context.Context, d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rs := newReplicaSet(d, controllers.TemplateHash(&d.Spec.Template, d.Status.CollisionCount))
	rs.Spec.Replicas = new(newReplicaSetSize(d, withNew(oldRSs, rs), rs))
	rev := maxRevision(oldRSs) + 1
	setNewReplicaSetAnnotations(d, rs, rev, false)

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return c.existingNewReplicaSet(ctx, d, rs.Name, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		return nil, c.reportCreateFailure(ctx, d, rs.Name, err)
	}
	if size(created) > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, reasonScaling, "Scaled up replica set %s from 0 to %d", created.Name, size(created))
	}
	if err := c.setRevision(ctx, d, strconv.FormatInt(rev, 10)); err != nil {
		return nil, err
	}
	if hasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSCreated, msg, c.now()))
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// existingNewReplicaSet returns the ReplicaSet name if d owns it with its
// template; else it counts a hash collision and returns createErr.
func (c *Controller) existingNewReplicaSet(ctx context.Context, d *appsv1.Deployment, name string, createErr error) (*appsv1.ReplicaSet, error) {
	rs, err := c.rsLister.ReplicaSets(d.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		rs, err = c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("get existing replica set %s: %w", name, err)
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
		return rs, nil
	}
	d.Status.CollisionCount = new(ptr.Deref(d.Status.CollisionCount, 0) + 1)
	if err := c.updateStatus(ctx, d); err != nil {
		return nil, err
	}
	slog.Info("hash collision, collisionCount raised", "namespace", d.Namespace, "deployment", d.Name,
		"replicaset", name, "collisionCount", *d.Status.CollisionCount)
	return nil, createErr
}

// reportCreateFailure records a failed create as the Progressing
// condition ReplicaSetCreateError and a warning event, and returns err.
func (c *Controller) reportCreateFailure(ctx context.Context, d *appsv1.Deployment, name string, err error) error {
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", name, err)
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonFailedRSCreate, msg, c.now()))
		if uerr := c.updateStatus(ctx, d); uerr != nil {
			slog.Warn("report replica set create failure", "namespace", d.Namespace, "deployment", d.Name, "err", uerr)
		}
	}
	c.recorder.Event(d, corev1.EventTypeWarning, reasonFailedRSCreate, msg)
	return fmt.Errorf("create replica set %s: %w", name, err)
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
// this is an update of d there (its status is the status subresource's
// and ignored), conditional on d's resourceVersion: a Deployment changed
// since it was read is synced again from the newer copy. d takes over the
// new resourceVersion.
func (c *Controller) setRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if rev == "" || d.Annotations[revisionAnnotation] == rev {
		return nil
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[revisionAnnotation] = rev
	updated, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("set deployment revision %s: %w", rev, err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}
