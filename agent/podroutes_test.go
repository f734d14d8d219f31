package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-lab/skiff/cni"
)

// fakeRoutes records what the agent wants routed and calls the routes via
// 192.0.2.0/24 unreachable (another L2 segment).
type fakeRoutes struct {
	mu   sync.Mutex
	last []cni.PeerRoute
}

func (f *fakeRoutes) SyncRoutes(want []cni.PeerRoute) ([]cni.PeerRoute, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = want
	var unreachable []cni.PeerRoute
	for _, r := range want {
		if strings.HasPrefix(r.Via.String(), "192.0.2.") {
			unreachable = append(unreachable, r)
		}
	}
	return unreachable, nil
}

func (f *fakeRoutes) routes() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.last {
		out = append(out, r.Node+":"+r.PodCIDR.String()+"@"+r.Via.String())
	}
	return strings.Join(out, " ")
}

func labNode(name, cidr, ip string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{PodCIDR: cidr}}
	if ip != "" {
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}, {Type: v1.NodeInternalIP, Address: ip}}
	}
	return n
}

// TestRoutePods follows the Nodes: a route to each other node with a pod
// CIDR and an address, changed with its address, gone with the node; a
// node on another segment gets a Warning event on this node, once.
func TestRoutePods(t *testing.T) {
	client := fake.NewClientset(labNode("self", "10.244.0.0/24", "10.0.0.1"), labNode("n2", "10.244.2.0/24", "10.0.0.2"),
		labNode("n3", "", "10.0.0.3"), labNode("n4", "10.244.4.0/24", ""))
	events := record.NewFakeRecorder(10)
	a := &Agent{cfg: Config{NodeName: "self"}, client: client, recorder: events}
	routes := &fakeRoutes{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.routePods(ctx, routes)
	nodes := client.CoreV1().Nodes()
	want := func(what, routed string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for routes.routes() != routed {
			if time.Now().After(deadline) {
				t.Fatalf("%s: routes %q, want %q", what, routes.routes(), routed)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	want("start", "n2:10.244.2.0/24@10.0.0.2")

	if _, err := nodes.Update(ctx, labNode("n3", "10.244.3.0/24", "10.0.0.3"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("n3 got its pod CIDR", "n2:10.244.2.0/24@10.0.0.2 n3:10.244.3.0/24@10.0.0.3")
	if _, err := nodes.Update(ctx, labNode("n2", "10.244.2.0/24", "192.0.2.7"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want("n2 moved", "n2:10.244.2.0/24@192.0.2.7 n3:10.244.3.0/24@10.0.0.3")
	if err := nodes.Delete(ctx, "n3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want("n3 deleted", "n2:10.244.2.0/24@192.0.2.7")

	var got []string
	for len(events.Events) > 0 {
		got = append(got, <-events.Events)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning PodRouteUnreachable") || !strings.Contains(got[0], "n2 (192.0.2.7") {
		t.Errorf("events %q, want one PodRouteUnreachable for n2", got)
	}
	if slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, "n3") }) {
		t.Errorf("an event names a reachable node: %q", got)
	}
}
