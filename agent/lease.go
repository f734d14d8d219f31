package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	leaseDuration = 40 * time.Second // the kubelet's default
	leaseRenew    = 10 * time.Second
	statusEvery   = 60 * time.Second // status is posted at least this often
	statusCheck   = 10 * time.Second // and checked for changes this often
)

// renewLease keeps the node's Lease in kube-node-lease fresh until ctx ends.
func (a *Agent) renewLease(ctx context.Context, node *v1.Node) {
	for {
		if err := a.renewLeaseOnce(ctx, node); err != nil && ctx.Err() == nil {
			slog.Warn("renew node lease", "node", a.cfg.NodeName, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(leaseRenew):
		}
	}
}

func (a *Agent) renewLeaseOnce(ctx context.Context, node *v1.Node) error {
	leases := a.client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	now := metav1.NewMicroTime(a.clock.Now())
	lease, err := leases.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: a.cfg.NodeName, Namespace: v1.NamespaceNodeLease,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		}}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(a.cfg.NodeName),
			LeaseDurationSeconds: ptr.To(int32(leaseDuration.Seconds())), RenewTime: &now}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return fmt.Errorf("get lease: %w", err)
	}
	lease.Spec.HolderIdentity = ptr.To(a.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(leaseDuration.Seconds()))
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
