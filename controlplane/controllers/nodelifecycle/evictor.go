package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// podEviction is what the evictor remembers of a pod on a node with
// NoExecute taints.
type podEviction struct {
	// since is when the pod was first seen there; it stands in for the
	// timeAdded of taints that have none.
	since time.Time
	// scheduled is set while a deletion is due later, so that dropping it
	// is reported.
	scheduled bool
}

// syncPod deletes the pod key if its node's NoExecute taints say it must
// go now, or looks at it again when they will.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetEviction(key)
		return nil
	}
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		c.forgetEviction(key)
		return nil
	}
	node, err := c.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		c.forgetEviction(key)
		return nil // gone: the pod garbage collector's business
	}
	taints := noExecuteTaints(node)
	now := c.clock.Now()
	ev := evictionFor(pod.Spec.Tolerations, taints, c.evictionSince(key, now, len(taints) > 0))
	switch {
	case !ev.evict:
		c.cancelEviction(pod)
		return nil
	case now.Before(ev.at):
		c.scheduleEviction(key)
		c.podQueue.AddAfter(key, ev.at.Sub(now))
		return nil
	}
	return c.evict(ctx, pod)
}

// evict deletes pod gracefully, first marking why in a DisruptionTarget
// condition, as kube's taint eviction controller does.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	c.evictionRecorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", podKey(pod))
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(c.clock.Now()),
		Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint",
	}}}})
	_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil || apierrors.IsNotFound(err) {
		err = c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("evict pod: %w", err)
	}
	slog.Info("evicted pod from tainted node", "namespace", pod.Namespace, "pod", pod.Name, "node", pod.Spec.NodeName)
	c.forgetEviction(podKey(pod))
	return nil
}

// evictionSince returns when the pod was first seen on a node with
// NoExecute taints, recording now if this is the first time.
func (c *Controller) evictionSince(key string, now time.Time, tainted bool) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.evictions[key]
	if !ok {
		if !tainted {
			return now
		}
		e = &podEviction{since: now}
		c.evictions[key] = e
	}
	return e.since
}

func (c *Controller) scheduleEviction(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.evictions[key]; ok {
		e.scheduled = true
	}
}

// cancelEviction forgets the pod, reporting a deletion that was due.
func (c *Controller) cancelEviction(pod *corev1.Pod) {
	c.mu.Lock()
	e, ok := c.evictions[podKey(pod)]
	delete(c.evictions, podKey(pod))
	c.mu.Unlock()
	if ok && e.scheduled {
		c.evictionRecorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", podKey(pod))
	}
}

func (c *Controller) forgetEviction(key string) {
	c.mu.Lock()
	delete(c.evictions, key)
	c.mu.Unlock()
}
