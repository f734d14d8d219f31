package controlplane_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestTwoServersOneLeader runs two servers on one etcd: one holds the
// skiff-controlplane Lease and schedules; when it stops, the other takes
// the Lease over and schedules in its place.
func TestTwoServersOneLeader(t *testing.T) {
	endpoint := servertest.StartEtcd(t)
	servers := map[string]*servertest.Server{}
	for _, id := range []string{"server-a", "server-b"} {
		servers[id] = servertest.StartWith(t, func(c *controlplane.Config) {
			endpoint.External(c)
			c.Identity = id
			c.NodeMonitorGracePeriod = time.Hour // a simulated node renews no Lease
		})
	}
	client := servers["server-a"].Client()
	ctx := context.Background()
	leader := waitForHolder(t, client, "")
	if servers[leader] == nil {
		t.Fatalf("lease held by %q, not one of the servers", leader)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	markReady(t, client, "n1")
	createAndWaitBound(t, client, "before")

	servers[leader].Stop()
	follower := map[string]string{"server-a": "server-b", "server-b": "server-a"}[leader]
	client = servers[follower].Client()
	start := time.Now()
	if got := waitForHolder(t, client, leader); got != follower {
		t.Fatalf("after %s stopped the lease is held by %q, want %s", leader, got, follower)
	}
	createAndWaitBound(t, client, "after")
	// A server that stops releases the Lease: no waiting for it to expire.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("hand-over and scheduling took %s", took)
	}
}

// waitForHolder waits until the skiff-controlplane Lease has a holder
// other than not (empty: any holder) and returns it (or the last holder
// seen when that does not happen within 40 s).
func waitForHolder(t *testing.T, c kubernetes.Interface, not string) string {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	holder := ""
	for time.Now().Before(deadline) {
		l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "skiff-controlplane", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			holder = *l.Spec.HolderIdentity
			if holder != not {
				return holder
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return holder
}

func markReady(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Capacity, n.Status.Allocatable = alloc, alloc
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		markReady(t, c, name) // the node controller raced us (podCIDR): again
	}
}

func createAndWaitBound(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), testPod(name, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod "+name+" bound", func() bool {
		p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "n1"
	})
}
