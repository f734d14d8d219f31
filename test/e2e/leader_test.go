package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestKilledLeaderHandsOver runs two skiff servers on one etcd and kills
// the one holding the control-plane Lease with SIGKILL (no release): the
// other takes over once the lease expires (15 s) and schedules pods.
func TestKilledLeaderHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	etcd := servertest.StartEtcd(t)
	servers := map[string]*cluster{
		"server-a": startCluster(t, append(etcd.Flags(), "--identity", "server-a")...),
		"server-b": startCluster(t, append(etcd.Flags(), "--identity", "server-b")...),
	}
	leader := holder(t, servers["server-a"].client(), "")
	follower := map[string]string{"server-a": "server-b", "server-b": "server-a"}[leader]
	servers[leader].kill9()
	killed := time.Now()
	client := servers[follower].client()
	if got := holder(t, client, leader); got != follower {
		t.Fatalf("after killing %s the lease is held by %q", leader, got)
	}
	if took := time.Since(killed); took > 25*time.Second {
		t.Errorf("hand-over took %s, want within the 15 s lease plus a retry", took)
	}
	startSimNode(t, client, "sim-1")
	servers[follower].mustIn(podYAML, "create", "-f", "-")
	waitUntil(t, "the survivor to schedule", func() bool {
		return servers[follower].must("get", "pod", "web", "-o", "jsonpath={.spec.nodeName}") == "sim-1"
	})
}

// holder waits up to 40 s for the control-plane Lease to be held by
// someone other than not (empty: anyone).
func holder(t *testing.T, c kubernetes.Interface, not string) string {
	t.Helper()
	last := ""
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "skiff-controlplane", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			if last = *l.Spec.HolderIdentity; last != not {
				return last
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}
