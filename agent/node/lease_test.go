package node

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
)

func TestRenewLeaseCreatesTheNodesLease(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid"}}
	client := fake.NewClientset(node)
	n := New(Config{Name: "node1"}, client, nil, clock.RealClock{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { n.RenewLease(ctx, node); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "node1", metav1.GetOptions{})
		if err == nil {
			if *l.Spec.HolderIdentity != "node1" || *l.Spec.LeaseDurationSeconds != 40 || l.Spec.RenewTime == nil {
				t.Fatalf("lease spec %+v, want holder node1, 40 s, renewed", l.Spec)
			}
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "node-uid" {
				t.Fatalf("owners %+v, want the node", l.OwnerReferences)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lease after 10 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
