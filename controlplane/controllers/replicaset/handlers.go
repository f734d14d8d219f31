package replicaset

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

// Informer event handlers. They only enqueue keys and record what the
// expectations wait for; all decisions happen in sync.

// The owner handlers see a ReplicaSet or a ReplicationController: they
// need only its metadata.

func (c *Controller) ownerAdded(obj any) {
	owner := obj.(metav1.Object)
	c.queue.Add(keyOf(owner.GetNamespace(), owner.GetName()))
}

// ownerUpdated syncs on every update, not only spec changes, so that an
// owner whose last creates failed is retried whenever it is touched.
func (c *Controller) ownerUpdated(old, cur any) {
	oldOwner, curOwner := old.(metav1.Object), cur.(metav1.Object)
	if oldOwner.GetUID() != curOwner.GetUID() {
		// Deleted and recreated under the same name between two events.
		c.ownerDeleted(cache.DeletedFinalStateUnknown{Key: keyOf(oldOwner.GetNamespace(), oldOwner.GetName()), Obj: old})
	}
	c.queue.Add(keyOf(curOwner.GetNamespace(), curOwner.GetName()))
}

// ownerDeleted forgets the expectations so that a new owner with the same
// name starts clean.
func (c *Controller) ownerDeleted(obj any) {
	owner, ok := informer.FromTombstone[metav1.Object](obj)
	if !ok {
		return
	}
	key := keyOf(owner.GetNamespace(), owner.GetName())
	c.expectations.Forget(key)
	c.queue.Add(key)
}

// podOwners routes pod events to the cached owners.
func (c *Controller) podOwners() controllers.Owners[*appsv1.ReplicaSet] {
	return controllers.Owners[*appsv1.ReplicaSet]{
		Kind:     c.gvk,
		Get:      c.objects.Get,
		List:     c.objects.List,
		Selector: func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		Wake:     func(rs *appsv1.ReplicaSet) { c.queue.Add(keyOf(rs.Namespace, rs.Name)) },
	}
}

// podAdded wakes the pod's controller, counting an awaited creation, or,
// for an orphan, every owner that might adopt it.
func (c *Controller) podAdded(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (after a
		// restart): that is no creation to count.
		c.podDeleted(pod)
		return
	}
	if rs, ok := c.owners.Of(pod); ok {
		c.expectations.CreationObserved(keyOf(rs.Namespace, rs.Name))
	}
	c.owners.Added(pod)
}

// podUpdated wakes the owners a pod belongs to, before and after the
// change. A deletionTimestamp counts as the deletion: the ReplicaSet
// replaces a terminating pod at once instead of waiting for it to go.
func (c *Controller) podUpdated(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return // a resync, nothing changed
	}
	if curPod.DeletionTimestamp != nil {
		c.podDeleted(curPod)
		if !maps.Equal(oldPod.Labels, curPod.Labels) {
			c.podDeleted(oldPod)
		}
		return
	}
	c.owners.Updated(oldPod, curPod)
}

// podDeleted counts an awaited deletion and wakes the pod's controller.
// Orphans concern no one when they go.
func (c *Controller) podDeleted(obj any) {
	pod, ok := informer.FromTombstone[*corev1.Pod](obj)
	if !ok {
		return
	}
	if rs, ok := c.owners.Of(pod); ok {
		c.expectations.DeletionObserved(keyOf(rs.Namespace, rs.Name), keyOf(pod.Namespace, pod.Name))
		c.owners.Wake(rs)
	}
}
