package agent

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

// postNodeStatus keeps the node's status current until ctx ends: it is
// checked every statusCheck and written when it changed or statusEvery passed.
func (a *Agent) postNodeStatus(ctx context.Context) {
	var last time.Time
	for {
		posted, err := a.postNodeStatusOnce(ctx, a.clock.Since(last) >= statusEvery)
		if err != nil && ctx.Err() == nil {
			slog.Warn("post node status", "node", a.cfg.NodeName, "err", err)
		}
		if posted {
			last = a.clock.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(statusCheck):
		}
	}
}

func (a *Agent) postNodeStatusOnce(ctx context.Context, force bool) (bool, error) {
	readings, err := a.readNode(ctx)
	if err != nil {
		return false, err
	}
	posted := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		status := nodeStatus(node.Status, readings)
		a.setNodeAllocatable(status.Allocatable)
		if !force && sameNodeStatus(node.Status, status) {
			return nil
		}
		node.Status = status
		_, err = a.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		posted = err == nil
		return err
	})
	return posted, err
}

func (a *Agent) readNode(ctx context.Context) (nodeReadings, error) {
	m, err := readMachine(a.cfg.DataDir)
	if err != nil {
		return nodeReadings{}, fmt.Errorf("read machine: %w", err)
	}
	version, verr := a.rt.Version(ctx)
	return nodeReadings{
		machine: m, runtimeVersion: version, nodeIP: a.nodeIP, apiPort: int32(a.cfg.Port), systemReserved: a.cfg.SystemReserved,
		runtimeHealthy: verr == nil, networkReady: true, now: a.clock.Now(),
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
