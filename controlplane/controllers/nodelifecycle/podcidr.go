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
)

// The pod CIDR loop (kube-controller-manager's node IPAM controller) runs
// on a queue of its own: a node that finds the cluster CIDR full is
// retried after cidrRetryBase, doubling up to cidrRetryMax, and woken at
// once when a subnet is set free, so a full cluster CIDR costs neither a
// hot loop nor a log line per node.
const (
	cidrWorkers   = 2
	cidrRetryBase = time.Second
	cidrRetryMax  = 1000 * time.Second
)

// Reasons of the NetworkUnavailable condition the loop keeps on a node
// without a pod CIDR; the condition taints the node network-unavailable.
const (
	reasonCIDRNotAvailable = "CIDRNotAvailable"
	reasonCIDRAssigned     = "CIDRAssigned"
)

// syncPodCIDR gives node name a pod CIDR if it has none. The API server
// refuses to change a podCIDR once set, so a racing writer makes the patch
// fail rather than the node change subnet; the subnet is then given back
// and the node looked at again. A node that finds no subnet free gets a
// CIDRNotAvailable event and NetworkUnavailable=True, and waits in line.
func (c *Controller) syncPodCIDR(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.ipam.abandon(name)
		c.ipam.stopWaiting(name)
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.PodCIDR != "" {
		c.ipam.observe(node)
		return c.setNetworkCondition(ctx, node, corev1.ConditionFalse, reasonCIDRAssigned,
			"The node has pod CIDR "+node.Spec.PodCIDR)
	}
	cidr, err := c.ipam.forNode(name)
	if err != nil {
		return c.noCIDR(ctx, node, err)
	}
	c.ipam.stopWaiting(name)
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()}}})
	updated, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.ipam.abandon(name)
		return nil
	case apierrors.IsInvalid(err), apierrors.IsConflict(err):
		c.ipam.abandon(name)
		return fmt.Errorf("set pod CIDR %s: %w", cidr, err)
	case err != nil:
		// Kept pending: the retry offers the same subnet.
		return fmt.Errorf("set pod CIDR %s: %w", cidr, err)
	}
	c.ipam.observe(updated)
	slog.Debug("node pod CIDR set", "node", name, "podCIDR", cidr)
	return c.setNetworkCondition(ctx, updated, corev1.ConditionFalse, reasonCIDRAssigned, "The node has pod CIDR "+cidr.String())
}

// noCIDR records that node found the cluster CIDR full and puts it in
// line; the event is sent when it gets in line, not at each retry. The error it returns is the same for every node, so that the
// workers log it once per back-off step, not once per node.
func (c *Controller) noCIDR(ctx context.Context, node *corev1.Node, cause error) error {
	if c.ipam.wait(node.Name) {
		c.nodeRecorder.Eventf(node, corev1.EventTypeNormal, reasonCIDRNotAvailable, "Node %s status is now: %s", node.Name, reasonCIDRNotAvailable)
	}
	msg := fmt.Sprintf("No pod CIDR is free in the cluster CIDR %s (%d subnets of /%d)", c.cfg.ClusterCIDR, c.ipam.size(), c.ipam.maskSize())
	if err := c.setNetworkCondition(ctx, node, corev1.ConditionTrue, reasonCIDRNotAvailable, msg); err != nil {
		return err
	}
	return fmt.Errorf("allocate pod CIDR: %w (%d subnets of /%d in %s)", cause, c.ipam.size(), c.ipam.maskSize(), c.cfg.ClusterCIDR)
}

// setNetworkCondition sets node's NetworkUnavailable condition to status
// with reason, unless it is so already. Setting it False is only done over
// a condition this loop set True: a node that never lacked a subnet is not
// written to.
func (c *Controller) setNetworkCondition(ctx context.Context, node *corev1.Node, status corev1.ConditionStatus, reason, msg string) error {
	i := conditionIndex(node.Status.Conditions, corev1.NodeNetworkUnavailable)
	switch {
	case i >= 0 && node.Status.Conditions[i].Status == status:
		return nil
	case status == corev1.ConditionFalse && (i < 0 || node.Status.Conditions[i].Reason != reasonCIDRNotAvailable):
		return nil
	}
	updated := node.DeepCopy()
	now := metav1.Now()
	cond := corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: status, Reason: reason, Message: msg,
		LastHeartbeatTime: now, LastTransitionTime: now}
	if i < 0 {
		updated.Status.Conditions = append(updated.Status.Conditions, cond)
	} else {
		updated.Status.Conditions[i] = cond
	}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set condition %s=%s: %w", corev1.NodeNetworkUnavailable, status, err)
	}
	return nil
}

// wakeWaiting offers n subnets set free to the nodes that have waited
// longest, retrying them now instead of at the end of their back-off.
func (c *Controller) wakeWaiting(n int) {
	for range n {
		name, ok := c.ipam.next()
		if !ok {
			return
		}
		c.cidrQueue.Forget(name)
		c.cidrQueue.Add(name)
	}
}
