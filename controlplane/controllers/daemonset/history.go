package daemonset

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

// hashLabel tells a DaemonSet's pods and revisions of different
// templates apart; its value is the template's hash.
const hashLabel = controllers.HashLabel

// currentRevision finds or makes the ControllerRevision of the
// DaemonSet's template, newer than every other, and drops old ones beyond
// revisionHistoryLimit that no pod runs. It returns the template's hash.
func (c *Controller) currentRevision(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod) (string, error) {
	revs, err := c.history.Owned(ds)
	if err != nil {
		return "", err
	}
	data, err := controllers.TemplatePatch(&ds.Spec.Template)
	if err != nil {
		return "", err
	}
	hash := controllers.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	cur, err := c.history.Record(ctx, ds, revs, &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + hash,
			Labels:          controllers.WithLabel(ds.Spec.Template.Labels, hashLabel, hash),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}},
		Data: runtime.RawExtension{Raw: data},
	})
	if errors.Is(err, controllers.ErrRevisionNameTaken) {
		return "", c.raiseCollisionCount(ctx, ds)
	}
	if err != nil {
		return "", err
	}
	hash = cur.Labels[hashLabel]
	inUse := sets.New(hash)
	for _, p := range pods {
		inUse.Insert(p.Labels[hashLabel])
	}
	live := sets.New[string]()
	for _, r := range revs {
		if inUse.Has(r.Labels[hashLabel]) {
			live.Insert(r.Name)
		}
	}
	return hash, c.history.Prune(ctx, revs, live, int(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10)))
}

// raiseCollisionCount bumps the DaemonSet's collisionCount, so that its
// next revision gets another name, and fails the sync, to be retried.
func (c *Controller) raiseCollisionCount(ctx context.Context, ds *appsv1.DaemonSet) error {
	next := ds.DeepCopy()
	next.Status.CollisionCount = ptr.To(ptr.Deref(ds.Status.CollisionCount, 0) + 1)
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return errors.New("revision name taken: collisionCount raised")
}
