package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

// hashLabel tells a DaemonSet's pods and revisions of different
// templates apart.
const hashLabel = appsv1.ControllerRevisionHashLabelKey

// revisionData is what a ControllerRevision of a DaemonSet holds, as
// Kubernetes writes it: the strategic merge patch that puts the template
// back (`kubectl rollout undo` applies it).
func revisionData(ds *appsv1.DaemonSet) ([]byte, error) {
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ds.Spec.Template)
	if err != nil {
		return nil, err
	}
	tmpl["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// currentRevision finds or makes the ControllerRevision of the
// DaemonSet's template, newer than every other, and drops old ones beyond
// revisionHistoryLimit that no pod runs. It returns the template's hash.
func (c *Controller) currentRevision(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod) (string, error) {
	revs, err := c.ownedRevisions(ds)
	if err != nil {
		return "", err
	}
	data, err := revisionData(ds)
	if err != nil {
		return "", err
	}
	maxRev := int64(0)
	var cur *appsv1.ControllerRevision
	for _, r := range revs {
		maxRev = max(maxRev, r.Revision)
		if sameData(r.Data.Raw, data) {
			cur = r
		}
	}
	switch {
	case cur == nil:
		cur, err = c.createRevision(ctx, ds, data, maxRev+1)
	case cur.Revision < maxRev:
		// Rolled back to an older template: it becomes the newest.
		next := cur.DeepCopy()
		next.Revision = maxRev + 1
		cur, err = c.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return "", err
	}
	hash := cur.Labels[hashLabel]
	return hash, c.pruneRevisions(ctx, ds, revs, hash, pods)
}

func (c *Controller) ownedRevisions(ds *appsv1.DaemonSet) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(everything)
	if err != nil {
		return nil, err
	}
	var owned []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOfNoCopy(r); ref != nil && ref.UID == ds.UID {
			owned = append(owned, r)
		}
	}
	return owned, nil
}

// createRevision writes revision n of the template, named after the
// DaemonSet and the template's hash; a name taken by another template
// bumps the DaemonSet's collisionCount and fails the sync, to be retried.
func (c *Controller) createRevision(ctx context.Context, ds *appsv1.DaemonSet, data []byte, n int64) (*appsv1.ControllerRevision, error) {
	hash := controllers.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + hash, Namespace: ds.Namespace,
			Labels:          withLabel(ds.Spec.Template.Labels, hashLabel, hash),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}},
		Data: runtime.RawExtension{Raw: data}, Revision: n,
	}
	created, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, rev, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	existing, getErr := c.client.AppsV1().ControllerRevisions(ds.Namespace).Get(ctx, rev.Name, metav1.GetOptions{})
	if getErr == nil && sameData(existing.Data.Raw, data) && metav1.IsControlledBy(existing, ds) {
		return existing, nil
	}
	next := ds.DeepCopy()
	next.Status.CollisionCount = ptr.To(ptr.Deref(ds.Status.CollisionCount, 0) + 1)
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("revision name %s taken: collisionCount raised", rev.Name)
}

// pruneRevisions deletes the oldest revisions beyond the history limit
// that are not current and that no pod runs.
func (c *Controller) pruneRevisions(ctx context.Context, ds *appsv1.DaemonSet, revs []*appsv1.ControllerRevision, current string, pods []*corev1.Pod) error {
	inUse := map[string]bool{current: true}
	for _, p := range pods {
		inUse[p.Labels[hashLabel]] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !inUse[r.Labels[hashLabel]] {
			old = append(old, r)
		}
	}
	limit := int(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10))
	if len(old) <= limit {
		return nil
	}
	slices.SortFunc(old, func(a, b *appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	for _, r := range old[:len(old)-limit] {
		err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// sameData reports whether two revisions' data are the same JSON.
func sameData(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[key] = value
	return out
}
