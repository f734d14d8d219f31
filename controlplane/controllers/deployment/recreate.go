package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRecreate moves a Recreate Deployment one step, in this order:
// scale every old ReplicaSet to 0; wait until none of their pods is left
// (terminal pods aside); only then create the new ReplicaSet, or scale it,
// to spec.replicas. The new ReplicaSet is not created before, so that no
// new pod ever runs beside an old one.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	allRSs := withNew(oldRSs, newRS)
	if plan := scaleToZero(oldRSs); len(plan) > 0 {
		if err := c.apply(ctx, d, plan); err != nil {
			return err
		}
		return c.syncRolloutStatus(ctx, d, allRSs, newRS)
	}
	pods, err := c.podsByOwner(d, allRSs)
	if err != nil {
		return err
	}
	if oldPodsRunning(newRS, oldRSs, pods) {
		return c.syncRolloutStatus(ctx, d, allRSs, newRS)
	}
	if newRS == nil {
		if newRS, err = c.createNewReplicaSet(ctx, d, oldRSs); err != nil {
			return err
		}
		allRSs = withNew(oldRSs, newRS)
	}
	if size(newRS) != *d.Spec.Replicas {
		if _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d); err != nil {
			return err
		}
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanupHistory(ctx, d, oldRSs); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, allRSs, newRS)
}

// scaleToZero plans every active ReplicaSet of rss down to 0.
func scaleToZero(rss []*appsv1.ReplicaSet) []resize {
	var plan []resize
	for _, rs := range active(rss) {
		plan = append(plan, resize{rs, 0})
	}
	return plan
}

// oldPodsRunning reports whether an old ReplicaSet still reports pods, or
// any pod of one is not in a terminal phase. pods maps ReplicaSet UIDs to
// the pods they control.
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) bool {
	if actualReplicas(oldRSs) > 0 {
		return true
	}
	for uid, list := range pods {
		if newRS != nil && uid == newRS.UID {
			continue
		}
		for _, pod := range list {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				return true
			}
		}
	}
	return false
}

// podsByOwner maps the UIDs of d's ReplicaSets rss to the cached pods d
// selects that each controls.
func (c *Controller) podsByOwner(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pods, err := c.podLister.Pods(d.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	owned := map[types.UID][]*corev1.Pod{}
	for _, rs := range rss {
		owned[rs.UID] = nil
	}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			continue
		}
		if list, ok := owned[ref.UID]; ok {
			owned[ref.UID] = append(list, pod)
		}
	}
	return owned, nil
}
