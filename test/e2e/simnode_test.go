package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// simNode stands in for a node agent until skiff has one: it registers a
// Ready Node, renews its Lease, and reports every pod bound to it as
// Running and Ready with a pod IP. It stops with the test.
type simNode struct {
	t      testing.TB
	client kubernetes.Interface
	name   string
}

func startSimNode(t testing.TB, client kubernetes.Interface, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n := &simNode{t: t, client: client, name: name}
	n.register(ctx)
	go n.loop(ctx)
}

func (n *simNode) register(ctx context.Context) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{corev1.LabelHostname: n.name}}}
	if _, err := n.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Capacity, cur.Status.Allocatable = alloc, alloc
		cur.Status.NodeInfo.KubeletVersion = "v1.37.0-sim"
		cur.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

func (n *simNode) loop(ctx context.Context) {
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	lastLease := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if time.Since(lastLease) > 2*time.Second {
			n.renewLease(ctx)
			lastLease = time.Now()
		}
		n.runPods(ctx)
	}
}

func (n *simNode) renewLease(ctx context.Context) {
	leases := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	holder, seconds := n.name, int32(40)
	l, err := leases.Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now}}
		_, _ = leases.Create(ctx, l, metav1.CreateOptions{})
		return
	}
	l.Spec.RenewTime = &now
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// runPods reports the pods bound here as running and ready, and finishes
// the deletion of those being deleted, as an agent would.
func (n *simNode) runPods(ctx context.Context) {
	pods, err := n.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
	if err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			zero := int64(0)
			_ = n.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			continue
		}
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = fmt.Sprintf("10.244.0.%d", 2+i%250)
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		p.Status.StartTime = &now
		for _, typ := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady} {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
				Started: ptrTo(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
		_, _ = n.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}
}

func ptrTo[T any](v T) *T { return &v }
