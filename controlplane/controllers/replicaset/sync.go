package replicaset

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// sync brings the ReplicaSet key to its desired pods and writes its
// status. Pods are created or deleted only when the expectations of the
// previous sync are met and the ReplicaSet is not being deleted; the
// status is written either way. A ReplicaSet with pods becoming available
// later is queued again for then.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	rs, err := c.objects.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	mayManage := c.expectations.Satisfied(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// The API server validates selectors; retrying cannot help.
		slog.Error("selector", "controller", c.name, "namespace", namespace, "name", name, "err", err)
		return nil
	}
	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	active, err := c.claimPods(ctx, rs, selector, filterPods(all, isPodActive))
	if err != nil {
		return err
	}
	terminating := ownedPods(rs, selector, filterPods(all, isPodTerminating))

	var manageErr error
	if mayManage && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, rs, active)
	}
	now := c.now()
	if err := c.updateStatus(ctx, rs, calculateStatus(rs, active, terminating, manageErr, now)); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	if manageErr == nil {
		if d, ok := nextAvailable(active, rs.Spec.MinReadySeconds, now); ok {
			c.queue.AddAfter(key, d)
		}
	}
	return manageErr
}

// relatedPods are the pods of every ReplicaSet that has rs's controller
// (rs's Deployment), rs's own included; none for a ReplicaSet without one.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet) []*corev1.Pod {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil {
		return nil
	}
	rss, err := c.objects.List(rs.Namespace)
	if err != nil {
		return nil
	}
	seen := map[types.UID]bool{}
	var related []*corev1.Pod
	for _, sibling := range rss {
		if r := metav1.GetControllerOfNoCopy(sibling); r == nil || r.UID != ref.UID {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(sibling.Spec.Selector)
		if err != nil {
			continue
		}
		pods, _ := c.podLister.Pods(rs.Namespace).List(selector)
		for _, pod := range pods {
			if !seen[pod.UID] {
				seen[pod.UID] = true
				related = append(related, pod)
			}
		}
	}
	return related
}

// ownedPods are the pods rs controls and still selects.
func ownedPods(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var owned []*corev1.Pod
	for _, pod := range pods {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.UID == rs.UID && selector.Matches(labels.Set(pod.Labels)) {
			owned = append(owned, pod)
		}
	}
	return owned
}

func filterPods(pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if keep(pod) {
			out = append(out, pod)
		}
	}
	return out
}
