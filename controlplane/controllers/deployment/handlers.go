package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

// Informer event handlers. They only enqueue Deployment keys; all
// decisions happen in sync.

// addHandlers registers the handlers on the Deployment, ReplicaSet and
// Pod informers.
func (c *Controller) addHandlers(deployments, replicaSets, pods cache.SharedIndexInformer) error {
	return informer.AddHandlers(
		informer.Handler{Name: "deployment", Informer: deployments, Funcs: informer.OnChange(c.deploymentChanged)},
		informer.Handler{Name: "replicaset", Informer: replicaSets, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.replicaSetAdded,
			UpdateFunc: c.replicaSetUpdated,
			DeleteFunc: c.replicaSetDeleted,
		}},
		informer.Handler{Name: "pod", Informer: pods, Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: c.podDeleted}},
	)
}

func (c *Controller) deploymentChanged(obj any) {
	if key, ok := component.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) enqueue(d *appsv1.Deployment) {
	c.queue.Add(d.Namespace + "/" + d.Name)
}

// replicaSetOwners routes ReplicaSet events to the cached Deployments.
func (c *Controller) replicaSetOwners() controllers.Owners[*appsv1.Deployment] {
	return controllers.Owners[*appsv1.Deployment]{
		Kind: controllerKind,
		Get:  func(ns, name string) (*appsv1.Deployment, error) { return c.dLister.Deployments(ns).Get(name) },
		List: func(ns string) ([]*appsv1.Deployment, error) {
			return c.dLister.Deployments(ns).List(labels.Everything())
		},
		Selector: func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector },
		Wake:     c.enqueue,
	}
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
	c.owners.Added(rs)
}

// replicaSetUpdated wakes the Deployments the ReplicaSet belongs to before
// and after the change, or those that might adopt it.
func (c *Controller) replicaSetUpdated(old, cur any) {
	oldRS, curRS := old.(*appsv1.ReplicaSet), cur.(*appsv1.ReplicaSet)
	if oldRS.ResourceVersion != curRS.ResourceVersion { // else a resync
		c.owners.Updated(oldRS, curRS)
	}
}

// replicaSetDeleted wakes the ReplicaSet's Deployment.
func (c *Controller) replicaSetDeleted(obj any) {
	if rs, ok := informer.FromTombstone[*appsv1.ReplicaSet](obj); ok {
		c.owners.WakeController(rs)
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
	d, _ := c.owners.Of(rs)
	return d
}
