package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ipam tracks which pod CIDRs are taken. It is safe for concurrent use.
// A subnet is taken when a node holds it or when it was given to a node
// whose informer copy does not show it yet (pending), so that a lagging
// cache never makes the same subnet go out twice.
type ipam struct {
	mu      sync.Mutex
	set     *cidrSet
	pending map[string]netip.Prefix
}

func newIPAM(set *cidrSet) *ipam {
	return &ipam{set: set, pending: map[string]netip.Prefix{}}
}

// rebuild marks the pod CIDRs of nodes as taken; it runs before the first
// allocation.
func (a *ipam) rebuild(nodes []*corev1.Node) {
	for _, n := range nodes {
		a.observe(n)
	}
}

// observe marks what node holds as taken and settles its pending
// allocation: kept when the node shows it, freed when the node got
// another subnet some other way.
func (a *ipam) observe(node *corev1.Node) {
	held := nodeCIDRs(node)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range held {
		if err := a.set.occupy(p); err != nil {
			slog.Debug("node pod CIDR outside the cluster CIDR", "node", node.Name, "podCIDR", p, "err", err)
		}
	}
	if p, ok := a.pending[node.Name]; ok && len(held) > 0 {
		delete(a.pending, node.Name)
		if !containsPrefix(held, p) {
			_ = a.set.release(p)
		}
	}
}

// forNode returns the subnet to give node name: the one it was already
// given, or the lowest free one.
func (a *ipam) forNode(name string) (netip.Prefix, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.pending[name]; ok {
		return p, nil
	}
	p, err := a.set.allocate()
	if err != nil {
		return netip.Prefix{}, err
	}
	a.pending[name] = p
	return p, nil
}

// abandon frees the subnet given to node name that it never took.
func (a *ipam) abandon(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.pending[name]; ok {
		delete(a.pending, name)
		_ = a.set.release(p)
	}
}

// release frees what a deleted node held or was given.
func (a *ipam) release(node *corev1.Node) {
	a.abandon(node.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range nodeCIDRs(node) {
		_ = a.set.release(p)
	}
}

// nodeCIDRs parses spec.podCIDRs, or spec.podCIDR when that is all there is.
func nodeCIDRs(node *corev1.Node) []netip.Prefix {
	raw := node.Spec.PodCIDRs
	if len(raw) == 0 && node.Spec.PodCIDR != "" {
		raw = []string{node.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range raw {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func containsPrefix(ps []netip.Prefix, p netip.Prefix) bool {
	for _, q := range ps {
		if q.Masked() == p.Masked() {
			return true
		}
	}
	return false
}

// ensurePodCIDR gives node a pod CIDR if it has none and returns the node
// as it is now. The API server refuses to change a podCIDR once set, so a
// racing writer makes the patch fail rather than the node change subnet;
// the subnet is then given back and the node looked at again.
func (c *Controller) ensurePodCIDR(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	if node.Spec.PodCIDR != "" {
		c.ipam.observe(node)
		return node, nil
	}
	cidr, err := c.ipam.forNode(node.Name)
	if err != nil {
		c.nodeRecorder.Eventf(node, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", node.Name)
		return node, fmt.Errorf("allocate pod CIDR: %w", err)
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()}}})
	updated, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.ipam.abandon(node.Name)
		return node, nil
	case apierrors.IsInvalid(err), apierrors.IsConflict(err):
		c.ipam.abandon(node.Name)
		return node, fmt.Errorf("set pod CIDR %s: %w", cidr, err)
	case err != nil:
		// Kept pending: the retry offers the same subnet.
		return node, fmt.Errorf("set pod CIDR %s: %w", cidr, err)
	}
	c.ipam.observe(updated)
	slog.Info("node pod CIDR set", "node", node.Name, "podCIDR", cidr)
	return updated, nil
}
