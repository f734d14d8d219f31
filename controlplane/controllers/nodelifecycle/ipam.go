package nodelifecycle

import (
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// ipam tracks which pod CIDRs are taken. It is safe for concurrent use.
// A subnet is taken when a node holds it or when it was given to a node
// whose informer copy does not show it yet (pending), so that a lagging
// cache never makes the same subnet go out twice.
//
// Nodes that found no subnet free wait in line (waiting); each subnet set
// free is offered to the node that has waited longest.
type ipam struct {
	mu      sync.Mutex
	set     *cidrSet
	pending map[string]netip.Prefix
	waiting []string        // in line, longest waiting first
	inLine  map[string]bool // the names in waiting
}

func newIPAM(set *cidrSet) *ipam {
	return &ipam{set: set, pending: map[string]netip.Prefix{}, inLine: map[string]bool{}}
}

// size is how many subnets the cluster CIDR holds.
func (a *ipam) size() int { return len(a.set.used) }

// maskSize is the prefix length of each subnet.
func (a *ipam) maskSize() int { return a.set.maskSize }

// wait puts node name in line for a subnet, once; it reports whether the
// node was not in line before.
func (a *ipam) wait(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inLine[name] {
		return false
	}
	a.waiting = append(a.waiting, name)
	a.inLine[name] = true
	return true
}

// stopWaiting takes node name out of the line.
func (a *ipam) stopWaiting(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inLine[name] {
		delete(a.inLine, name)
		a.waiting = slices.DeleteFunc(a.waiting, func(n string) bool { return n == name })
	}
}

// next returns the node that has waited longest, taking it out of line.
func (a *ipam) next() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.waiting) == 0 {
		return "", false
	}
	name := a.waiting[0]
	a.waiting = a.waiting[1:]
	delete(a.inLine, name)
	return name, true
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

// release frees what a deleted node held or was given, and takes it out of
// line; it returns how many subnets were set free.
func (a *ipam) release(node *corev1.Node) int {
	a.stopWaiting(node.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	freed := 0
	if p, ok := a.pending[node.Name]; ok {
		delete(a.pending, node.Name)
		if a.set.release(p) == nil {
			freed++
		}
	}
	for _, p := range nodeCIDRs(node) {
		if a.set.release(p) == nil {
			freed++
		}
	}
	return freed
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
