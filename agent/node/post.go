package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// PostStatus keeps the node's status current until ctx ends: it is
// checked every statusCheck and written when it changed or statusEvery passed.
func (n *Node) PostStatus(ctx context.Context) {
	var last time.Time
	for {
		posted, err := n.postStatusOnce(ctx, n.clock.Since(last) >= statusEvery)
		if err != nil && ctx.Err() == nil {
			slog.Warn("post node status", "node", n.cfg.Name, "err", err)
		}
		if posted {
			last = n.clock.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-n.clock.After(statusCheck):
		}
	}
}

func (n *Node) postStatusOnce(ctx context.Context, force bool) (bool, error) {
	readings, err := n.readNode(ctx)
	if err != nil {
		return false, err
	}
	posted := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		status := nodeStatus(node.Status, readings)
		n.setAllocatable(status.Allocatable)
		if !force && sameNodeStatus(node.Status, status) {
			return nil
		}
		node.Status = status
		_, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		posted = err == nil
		return err
	})
	return posted, err
}

func (n *Node) readNode(ctx context.Context) (nodeReadings, error) {
	m, err := readMachine(n.cfg.DataDir)
	if err != nil {
		return nodeReadings{}, fmt.Errorf("read machine: %w", err)
	}
	version, verr := n.rt.Version(ctx)
	return nodeReadings{
		machine: m, runtimeVersion: version, nodeIP: n.cfg.IP, externalIP: n.cfg.ExternalIP, maxPods: n.cfg.MaxPods, apiPort: int32(n.cfg.APIPort), systemReserved: n.cfg.SystemReserved,
		runtimeHealthy: verr == nil, networkReady: true, now: n.clock.Now(),
	}, nil
}

// sameNodeStatus compares statuses without heartbeat times.
func sameNodeStatus(a, b v1.NodeStatus) bool {
	strip := func(s v1.NodeStatus) v1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
