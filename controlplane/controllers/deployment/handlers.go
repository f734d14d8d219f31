package deployment

import (
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

// Informer event handlers. They only enqueue Deployment keys; all
// decisions happen in sync.

func (c *Controller) deploymentChanged(obj any) {
	if key, ok := component.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueue(d *appsv1.Deployment) {
	c.queue.Add(d.Namespace + "/" + d.Name)
}

// replicaSetAdded wakes the ReplicaSet's Deployment or, for an orphan,
// every Deployment that might adopt it.
func (c *Controller) replicaSetAdded(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (after a restart).
		c.replicaSetDeleted(rs)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
		return
	}
	c.enqueueSelecting(rs)
}

// replicaSetUpdated wakes the Deployments the ReplicaSet belongs to before
// and after the change, or those that might adopt it.
func (c *Controller) replicaSetUpdated(old, cur any) {
	oldRS, curRS := old.(*appsv1.ReplicaSet), cur.(*appsv1.ReplicaSet)
	if oldRS.ResourceVersion == curRS.ResourceVersion {
		return // a resync, nothing changed
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(oldRS), metav1.GetControllerOfNoCopy(curRS)
	refChanged := !reflect.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		if d := c.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			c.enqueue(d)
		}
	}
	if curRef != nil {
		if d := c.resolveControllerRef(curRS.Namespace, curRef); d != nil {
			c.enqueue(d)
		}
		return
	}
	if refChanged || !maps.Equal(oldRS.Labels, curRS.Labels) {
		c.enqueueSelecting(curRS)
	}
}

// replicaSetDeleted wakes the ReplicaSet's Deployment. Orphans concern no
// one when they go.
func (c *Controller) replicaSetDeleted(obj any) {
	rs, ok := informer.FromTombstone[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
	}
}

// podDeleted wakes a Recreate Deployment whose old pods it may be waiting
// for. Rolling updates follow their ReplicaSets' status instead.
func (c *Controller) podDeleted(obj any) {
	pod, ok := informer.FromTombstone[*corev1.Pod](obj)
	if !ok {
		return
	}
	if d := c.deploymentForPod(pod); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}

// deploymentForPod returns the cached Deployment controlling the
// ReplicaSet controlling pod, or nil.
func (c *Controller) deploymentForPod(pod *corev1.Pod) *appsv1.Deployment {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	rsRef := metav1.GetControllerOfNoCopy(rs)
	if rsRef == nil {
		return nil
	}
	return c.resolveControllerRef(rs.Namespace, rsRef)
}

// resolveControllerRef returns the cached Deployment ref points to, or nil
// when ref names something else or a Deployment since replaced.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	return controllers.ResolveControllerRef(ref, controllerKind, c.dLister.Deployments(namespace).Get)
}

// enqueueSelecting wakes every Deployment whose selector matches an orphan
// ReplicaSet's labels.
func (c *Controller) enqueueSelecting(rs *appsv1.ReplicaSet) {
	if len(rs.Labels) == 0 {
		return
	}
	ds, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range ds {
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || selector.Empty() {
			continue
		}
		if selector.Matches(labels.Set(rs.Labels)) {
			c.enqueue(d)
		}
	}
}
