package agent

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestNodeWithoutPodCIDR starts the agent while its node can get no pod
// CIDR (the cluster CIDR is one /24, held by another node): the node is
// marked NetworkUnavailable and tainted, the agent still runs a
// host-network pod, and a pod on the pod network gets a
// FailedCreatePodSandBox event that says why it has no IP. When the other
// node goes, the subnet comes to this node and that pod runs.
func TestNodeWithoutPodCIDR(t *testing.T) {
	n := newTestNode(t, func(c *controlplane.Config) { c.ClusterCIDR = "10.251.0.0/24" }, nil)
	ctx := context.Background()
	filler := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "filler-" + n.cfg.NodeName}}
	if _, err := n.client.CoreV1().Nodes().Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitNode(filler.Name, "the filler to hold the only subnet", func(node *v1.Node) bool { return node.Spec.PodCIDR != "" })
	n.start()
	n.waitNode(n.cfg.NodeName, "NetworkUnavailable and its taint", func(node *v1.Node) bool {
		return networkUnavailable(node) == v1.ConditionTrue && hasNodeTaint(node, v1.TaintNodeNetworkUnavailable)
	})

	host := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "host"},
		Spec: v1.PodSpec{HostNetwork: true, Containers: []v1.Container{busybox("c", "sleep", "3600")}}})
	n.waitPod("default", host.Name, "the host-network pod to run", 60*time.Second, running)
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "podnet"},
		Spec: v1.PodSpec{Containers: []v1.Container{busybox("c", "sleep", "3600")}}})
	n.waitEventMatching(pod, "FailedCreatePodSandBox", func(msg string) bool { return strings.Contains(msg, "no pod CIDR") })

	if err := n.client.CoreV1().Nodes().Delete(ctx, filler.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := n.waitPod("default", pod.Name, "the pod-network pod to run once the node has a subnet", 60*time.Second, running)
	if ip, err := netip.ParseAddr(got.Status.PodIP); err != nil || !netip.MustParsePrefix("10.251.0.0/24").Contains(ip) {
		t.Errorf("pod IP %q, want one of 10.251.0.0/24", got.Status.PodIP)
	}
	n.waitNode(n.cfg.NodeName, "NetworkUnavailable=False and no taint", func(node *v1.Node) bool {
		return networkUnavailable(node) == v1.ConditionFalse && !hasNodeTaint(node, v1.TaintNodeNetworkUnavailable)
	})
}

func (n *testNode) waitNode(name, what string, cond func(*v1.Node) bool) {
	n.t.Helper()
	servertest.Eventually(n.t, what, 30*time.Second, func(ctx context.Context) (bool, string) {
		node, err := n.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(node), "podCIDR " + node.Spec.PodCIDR + ", NetworkUnavailable " + string(networkUnavailable(node))
	})
}

func networkUnavailable(node *v1.Node) v1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeNetworkUnavailable {
			return c.Status
		}
	}
	return ""
}

func hasNodeTaint(node *v1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}
