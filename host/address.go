package host

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Interface is what choosing this machine's address needs to know of one
// network interface.
type Interface struct {
	Name     string
	Up       bool
	Loopback bool
	// DefaultRoute is the metric of the interface's default route in the
	// main table; nil when it holds none.
	DefaultRoute *int
	Addrs        []netip.Addr
}

// ChooseAddress is the address the rest of the cluster reaches this
// machine at when no flag names one, as kube-apiserver and the kubelet
// choose it: the first global unicast IPv4 address of the interface that
// holds the default route (the lowest metric first), else of any other up
// interface but loopback, else 127.0.0.1. An address in one of exclude is
// never chosen: those are the ones the node agent manages itself (the
// cluster DNS address it puts on lo, the pod bridge's gateway, a VXLAN
// device's), which may outlive the agent and must not become the node's.
func ChooseAddress(ifaces []Interface, exclude []netip.Prefix) netip.Addr {
	withRoute := slices.DeleteFunc(slices.Clone(ifaces), func(i Interface) bool { return i.DefaultRoute == nil })
	slices.SortStableFunc(withRoute, func(a, b Interface) int { return cmp.Compare(*a.DefaultRoute, *b.DefaultRoute) })
	for _, group := range [][]Interface{withRoute, ifaces} {
		for _, iface := range group {
			if !iface.Up || iface.Loopback {
				continue
			}
			for _, a := range iface.Addrs {
				if a.Is4() && a.IsGlobalUnicast() && !slices.ContainsFunc(exclude, func(p netip.Prefix) bool { return p.Contains(a) }) {
					return a
				}
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// DefaultAddress is ChooseAddress over this machine's interfaces (in the
// calling thread's network namespace).
func DefaultAddress(exclude ...netip.Prefix) (netip.Addr, error) {
	ifaces, err := Interfaces()
	if err != nil {
		return netip.Addr{}, err
	}
	return ChooseAddress(ifaces, exclude), nil
}

// Interfaces lists the machine's interfaces with their IPv4 addresses and
// default routes, in the order of their index.
func Interfaces() ([]Interface, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	metrics := map[int]int{}
	for _, r := range routes {
		if r.Dst != nil && !(r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask)) {
			continue
		}
		if m, ok := metrics[r.LinkIndex]; !ok || r.Priority < m {
			metrics[r.LinkIndex] = r.Priority
		}
	}
	var out []Interface
	for _, l := range links {
		attrs := l.Attrs()
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", attrs.Name, err)
		}
		iface := Interface{Name: attrs.Name, Up: attrs.Flags&net.FlagUp != 0, Loopback: attrs.Flags&net.FlagLoopback != 0}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				iface.Addrs = append(iface.Addrs, ip.Unmap())
			}
		}
		if m, ok := metrics[attrs.Index]; ok {
			iface.DefaultRoute = &m
		}
		out = append(out, iface)
	}
	return out, nil
}

func isZeroMask(mask []byte) bool {
	return !slices.ContainsFunc(mask, func(b byte) bool { return b != 0 })
}

// ManagedPrefixes are the ranges whose addresses a node's agent manages
// itself, to exclude from ChooseAddress: the service CIDR (the cluster DNS
// address on lo) and the cluster CIDR (the pod bridge, VXLAN). Empty
// strings are skipped.
func ManagedPrefixes(serviceCIDR, clusterCIDR string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range []string{serviceCIDR, clusterCIDR} {
		if c == "" {
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
