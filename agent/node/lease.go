package node

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/apimachinery/lease"
)

const (
	leaseDuration = 40 * time.Second // the kubelet's default
	leaseRenew    = 10 * time.Second // a quarter of it, as the kubelet
	statusEvery   = 60 * time.Second // status is posted at least this often
	statusCheck   = 10 * time.Second // and checked for changes this often
)

// RenewLease keeps the node's Lease in kube-node-lease fresh until ctx
// ends, with the kubelet's lease controller (component-helpers): it
// creates the Lease owned by the node, renews it every leaseRenew and
// retries a failed renewal with back-off.
func (n *Node) RenewLease(ctx context.Context, node *v1.Node) {
	ownedByNode := func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) == 0 {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		}
		return nil
	}
	lease.NewController(n.clock, n.client, n.cfg.Name, int32(leaseDuration.Seconds()), nil,
		leaseRenew, n.cfg.Name, v1.NamespaceNodeLease, ownedByNode).Run(ctx)
}
