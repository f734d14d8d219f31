package cni

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Pods on other nodes are reached through one route per node to its pod
// CIDR. host-gw (SyncRoutes) routes via the node's address, which must be
// on a subnet this node is connected to (the nodes share an L2 segment);
// VXLAN (vxlan.go) routes through a VXLAN device to the node's VTEP, for
// nodes that only share a routed network. The routes carry a protocol
// number of skiff's own, so that a sync tells them from every other route
// on the node and removes only its own.

// RouteProtocol marks the routes skiff keeps (ip route shows "proto 157").
const RouteProtocol netlink.RouteProtocol = 157

// PeerRoute is the route to one other node's pods.
type PeerRoute struct {
	Node    string
	PodCIDR netip.Prefix
	Via     netip.Addr       // the node's address
	VtepMAC net.HardwareAddr // its VXLAN device's address (VXLAN only)
}

// SyncRoutes makes the node's host-gw routes exactly want: it adds or
// changes the routes whose next hop is on a connected subnet and removes
// every other route it made earlier. It returns the routes it could not
// set because their next hop is not directly reachable (another L2
// segment: a route would blackhole the node's pods).
func SyncRoutes(want []PeerRoute) (unreachable []PeerRoute, err error) {
	return syncRoutes(want, func(r PeerRoute) (*netlink.Route, hop) {
		h := nextHop(r.Via)
		if h == hopRouted {
			h = hopUnreachable // the gateway would get the pods' packets
		}
		return &netlink.Route{Dst: prefixNet(r.PodCIDR), Gw: r.Via.AsSlice(), Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}, h
	})
}

// RemoveRoutes deletes every route SyncRoutes or a VXLAN made, for a node
// taken down.
func RemoveRoutes() error {
	_, err := SyncRoutes(nil)
	return err
}

// syncRoutes makes skiff's routes those that route gives for want,
// leaving out the peers it finds unreachable (returned) or local.
func syncRoutes(want []PeerRoute, route func(PeerRoute) (*netlink.Route, hop)) (unreachable []PeerRoute, err error) {
	have, err := netlink.RouteListFiltered(netlink.FAMILY_V4,
		&netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	keep := map[string]bool{}
	var errs []error
	for _, r := range want {
		wanted, h := route(r)
		switch h {
		case hopLocal:
			continue // a node at one of this node's addresses: its pods are here too
		case hopUnreachable:
			unreachable = append(unreachable, r)
			continue
		}
		keep[r.PodCIDR.String()] = true
		if slices.ContainsFunc(have, func(h netlink.Route) bool { return sameRoute(h, wanted) }) {
			continue
		}
		if err := netlink.RouteReplace(wanted); err != nil {
			errs = append(errs, fmt.Errorf("route to %s's pods %s via %s: %w", r.Node, r.PodCIDR, r.Via, err))
		}
	}
	for _, h := range have {
		if h.Dst != nil && !keep[h.Dst.String()] {
			if err := netlink.RouteDel(&h); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("remove route to %s: %w", h.Dst, err))
			}
		}
	}
	return unreachable, errors.Join(errs...)
}

type hop int

const (
	hopDirect      hop = iota // on a subnet of one of the node's interfaces
	hopLocal                  // one of the node's own addresses
	hopRouted                 // through a gateway
	hopUnreachable            // no route at all
)

// nextHop tells how the node reaches ip.
func nextHop(ip netip.Addr) hop {
	routes, err := netlink.RouteGet(net.IP(ip.AsSlice()))
	switch {
	case err != nil || len(routes) == 0:
		return hopUnreachable
	case routes[0].Type == unix.RTN_LOCAL:
		return hopLocal
	case routes[0].Type != unix.RTN_UNICAST:
		return hopUnreachable // blackhole, prohibit, unreachable
	case routes[0].Gw == nil:
		return hopDirect
	}
	return hopRouted
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func sameRoute(h netlink.Route, r *netlink.Route) bool {
	return h.Dst != nil && h.Dst.String() == r.Dst.String() && h.Gw.Equal(r.Gw) &&
		(r.LinkIndex == 0 || h.LinkIndex == r.LinkIndex)
}
