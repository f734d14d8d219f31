package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// syncNode brings one node up to date: health, taints, and what follows
// when it stops being Ready (its pod CIDR has a loop of its own). Each step works on the node as the
// previous one left it; a failing step does not stop the others, and any
// failure retries the whole sync (every step is idempotent).
func (c *Controller) syncNode(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.probes, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	node, err = c.checkHealth(ctx, node)
	errs = append(errs, err)
	node, err = c.syncTaints(ctx, node)
	errs = append(errs, err)
	errs = append(errs, c.noteReadiness(ctx, node))
	return errors.Join(errs...)
}

// checkHealth records the node's heartbeats and, once it has been silent
// past its grace period, sets its conditions to Unknown. A node not yet
// silent is looked at again when its grace period would run out.
func (c *Controller) checkHealth(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name)
	if err != nil {
		lease = nil
	}
	now := c.clock.Now()
	c.mu.Lock()
	prev := c.probes[node.Name]
	p := observe(prev, node, lease, now)
	c.probes[node.Name] = &p
	c.mu.Unlock()
	if prev == nil {
		c.nodeRecorder.Eventf(node, corev1.EventTypeNormal, "RegisteredNode", "Registered Node %s in Controller", node.Name)
	}
	deadline := p.deadline(c.cfg.MonitorGracePeriod, c.cfg.StartupGracePeriod)
	if now.Before(deadline) {
		c.nodeQueue.AddAfter(node.Name, deadline.Sub(now))
		return node, nil
	}
	conditions, changed := markUnknown(node.Status.Conditions, node.CreationTimestamp, now)
	if !changed {
		return node, nil
	}
	updated := node.DeepCopy()
	updated.Status.Conditions = conditions
	updated, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return node, fmt.Errorf("mark conditions unknown: %w", err)
	}
	slog.Info("node stopped posting status", "node", node.Name, "silent", now.Sub(p.at).Round(time.Millisecond))
	return updated, nil
}

// syncTaints makes the controller's taints on node match its conditions.
func (c *Controller) syncTaints(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	taints, changed := reconcileTaints(node.Spec.Taints, desiredTaints(node), c.clock.Now())
	if !changed {
		return node, nil
	}
	updated := node.DeepCopy()
	updated.Spec.Taints = taints
	updated, err := c.client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return node, fmt.Errorf("update taints: %w", err)
	}
	level := slog.LevelDebug
	if !slices.Equal(taintKeys(noExecuteTaints(node)), taintKeys(noExecuteTaints(updated))) {
		level = slog.LevelInfo // pods may be evicted: worth a line
	}
	slog.Log(ctx, level, "node taints updated", "node", node.Name, "ready", readyStatus(node), "taints", taintKeys(taints))
	return updated, nil
}

// noteReadiness acts on a change of the node's Ready status since the
// last sync: a node that stops being Ready gets a NodeNotReady event and
// its pods are marked not Ready. A failure leaves the change unnoted, so
// that the retry does it again.
func (c *Controller) noteReadiness(ctx context.Context, node *corev1.Node) error {
	cur := readyStatus(node)
	c.mu.Lock()
	p := c.probes[node.Name]
	var last corev1.ConditionStatus
	if p != nil {
		last = p.ready
	}
	c.mu.Unlock()
	if p == nil || last == cur {
		return nil
	}
	if last == corev1.ConditionTrue {
		c.nodeRecorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
		if err := c.markPodsNotReady(ctx, node.Name); err != nil {
			return err
		}
	}
	c.mu.Lock()
	if p := c.probes[node.Name]; p != nil {
		p.ready = cur
	}
	c.mu.Unlock()
	return nil
}

// markPodsNotReady sets the Ready condition of the node's pods to False,
// as the node's agent can no longer vouch for them.
func (c *Controller) markPodsNotReady(ctx context.Context, nodeName string) error {
	var errs []error
	now := metav1.NewTime(c.clock.Now())
	for _, pod := range c.podsOnNode(nodeName) {
		i := podConditionIndex(pod.Status.Conditions, corev1.PodReady)
		if i < 0 || pod.Status.Conditions[i].Status == corev1.ConditionFalse {
			continue
		}
		updated := pod.DeepCopy()
		cond := &updated.Status.Conditions[i]
		cond.Status, cond.LastTransitionTime = corev1.ConditionFalse, now
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("mark pod %s not ready: %w", podKey(pod), err))
			}
			continue
		}
		c.nodeRecorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return errors.Join(errs...)
}

func podConditionIndex(conditions []corev1.PodCondition, typ corev1.PodConditionType) int {
	for i := range conditions {
		if conditions[i].Type == typ {
			return i
		}
	}
	return -1
}

func taintKeys(taints []corev1.Taint) []string {
	out := make([]string, len(taints))
	for i, t := range taints {
		out[i] = t.Key + ":" + string(t.Effect)
	}
	return out
}
