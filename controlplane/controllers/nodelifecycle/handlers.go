package nodelifecycle

import (
	"fmt"
	"reflect"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

var labelsEverything = labels.Everything()

// Informer event handlers. They only enqueue keys, except that a deleted
// node's pod CIDR is freed and its heartbeat record dropped at once.

func (c *Controller) addHandlers(nodes, leases, pods cache.SharedIndexInformer) error {
	return informer.AddHandlers(
		informer.Handler{Name: "node", Informer: nodes, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.nodeAdded,
			UpdateFunc: c.nodeUpdated,
			DeleteFunc: c.nodeDeleted,
		}},
		informer.Handler{Name: "lease", Informer: leases, Funcs: cache.FilteringResourceEventHandler{
			FilterFunc: isNodeLease,
			Handler:    informer.OnChange(c.leaseChanged),
		}},
		informer.Handler{Name: "pod", Informer: pods, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.podAdded,
			UpdateFunc: c.podUpdated,
			DeleteFunc: c.podDeleted,
		}},
	)
}

func (c *Controller) nodeAdded(obj any) {
	node := obj.(*corev1.Node)
	c.nodeQueue.Add(node.Name)
	c.needPodCIDR(node)
	if len(noExecuteTaints(node)) > 0 {
		c.enqueuePodsOn(node.Name)
	}
}

func (c *Controller) nodeUpdated(old, cur any) {
	oldNode, node := old.(*corev1.Node), cur.(*corev1.Node)
	c.nodeQueue.Add(node.Name)
	c.needPodCIDR(node)
	if !reflect.DeepEqual(noExecuteTaints(oldNode), noExecuteTaints(node)) {
		c.enqueuePodsOn(node.Name)
	}
}

// nodeDeleted frees the node's pod CIDR; its pods are the pod garbage
// collector's business.
func (c *Controller) nodeDeleted(obj any) {
	node, ok := informer.FromTombstone[*corev1.Node](obj)
	if !ok {
		return
	}
	c.wakeWaiting(c.ipam.release(node))
	c.mu.Lock()
	delete(c.probes, node.Name)
	c.mu.Unlock()
	c.nodeRecorder.Eventf(node, corev1.EventTypeNormal, "RemovingNode", "Removing Node %s from Controller", node.Name)
}

// needPodCIDR marks a node's pod CIDR taken, or queues a node without one
// for one, unless it is already backing off after finding none free (a
// freed subnet wakes it).
func (c *Controller) needPodCIDR(node *corev1.Node) {
	switch {
	case node.Spec.PodCIDR != "":
		c.ipam.observe(node)
	case c.cidrQueue.NumRequeues(node.Name) == 0:
		c.cidrQueue.Add(node.Name)
	}
}

func isNodeLease(obj any) bool {
	lease, ok := informer.FromTombstone[*coordinationv1.Lease](obj)
	return ok && lease.Namespace == corev1.NamespaceNodeLease
}

// leaseChanged looks at the lease's node (lease name = node name).
func (c *Controller) leaseChanged(obj any) {
	if lease, ok := informer.FromTombstone[*coordinationv1.Lease](obj); ok {
		c.nodeQueue.Add(lease.Name)
	}
}

func (c *Controller) podAdded(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
		c.enqueuePod(pod)
	}
}

// podUpdated looks again at a pod when it is bound or its tolerations
// change (they may only be added or shortened).
func (c *Controller) podUpdated(old, cur any) {
	oldPod, pod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if pod.Spec.NodeName == "" {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.forgetEviction(podKey(pod))
		return
	}
	if oldPod.Spec.NodeName != pod.Spec.NodeName || !reflect.DeepEqual(oldPod.Spec.Tolerations, pod.Spec.Tolerations) {
		c.enqueuePod(pod)
	}
}

func (c *Controller) podDeleted(obj any) {
	if key, ok := component.KeyOf(obj); ok {
		c.forgetEviction(key)
	}
}

func (c *Controller) enqueuePodsOn(node string) {
	for _, pod := range c.podsOnNode(node) {
		c.enqueuePod(pod)
	}
}

func (c *Controller) enqueuePod(pod *corev1.Pod) {
	c.podQueue.Add(podKey(pod))
}

func podKey(pod *corev1.Pod) string {
	return fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
}
