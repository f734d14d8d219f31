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

// The VXLAN backend is flannel's: every node has a VXLAN device (VNI 1,
// UDP 8472, no learning) whose address is its pod CIDR's network address
// and whose MAC the node publishes (on its Node, annotation VtepMACAnnotation).
// For each other node, three entries, all set by the agent: a route to the
// node's pod CIDR via its VTEP address (the pod CIDR's network address)
// onlink through the device, a permanent neighbor entry for that address
// with the node's VTEP MAC, and a forwarding entry sending that MAC to the
// node's own address. The underlay only needs to route between the nodes'
// addresses; they need not share an L2 segment.

// VXLAN device defaults, flannel's on Linux.
const (
	VXLANDevice = "skiff.vxlan"
	vxlanVNI    = 1
	vxlanPort   = 8472
	// vxlanOverhead is what encapsulation adds to a packet (outer IPv4,
	// UDP and VXLAN headers and inner Ethernet).
	vxlanOverhead = 50
)

// VtepMACAnnotation is the Node annotation that holds its VXLAN device's MAC.
const VtepMACAnnotation = "skiff.io/vxlan-vtep-mac"

// VXLAN is the node's VXLAN device.
type VXLAN struct {
	link netlink.Link
}

// EnsureVXLAN creates (or adopts) the node's VXLAN device over the
// interface holding nodeIP, addressed with podCIDR's network address, and
// sets it up.
func EnsureVXLAN(nodeIP netip.Addr, podCIDR netip.Prefix) (*VXLAN, error) {
	underlay, err := linkWithAddress(nodeIP)
	if err != nil {
		return nil, err
	}
	want := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: VXLANDevice, MTU: underlay.Attrs().MTU - vxlanOverhead},
		VxlanId:   vxlanVNI, VtepDevIndex: underlay.Attrs().Index, SrcAddr: nodeIP.AsSlice(), Port: vxlanPort,
	}
	link, err := netlink.LinkByName(VXLANDevice)
	if err == nil && !sameVXLAN(link, want) {
		if err := netlink.LinkDel(link); err != nil {
			return nil, fmt.Errorf("replace %s: %w", VXLANDevice, err)
		}
		err = errors.New("replaced")
	}
	if err != nil {
		if err := netlink.LinkAdd(want); err != nil {
			return nil, fmt.Errorf("create %s: %w", VXLANDevice, err)
		}
		if link, err = netlink.LinkByName(VXLANDevice); err != nil {
			return nil, err
		}
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: podCIDR.Masked().Addr().AsSlice(), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return nil, fmt.Errorf("address %s: %w", VXLANDevice, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("set %s up: %w", VXLANDevice, err)
	}
	return &VXLAN{link: link}, nil
}

// VXLANMTU is the MTU of a VXLAN device over the interface holding
// nodeIP: what pods' interfaces should use with the VXLAN backend.
func VXLANMTU(nodeIP netip.Addr) (int, error) {
	underlay, err := linkWithAddress(nodeIP)
	if err != nil {
		return 0, err
	}
	return underlay.Attrs().MTU - vxlanOverhead, nil
}

// MAC is the device's address, which the other nodes send to.
func (v *VXLAN) MAC() net.HardwareAddr { return v.link.Attrs().HardwareAddr }

// SyncRoutes makes the routes, neighbor and forwarding entries to the
// other nodes exactly want's; a peer without a VTEP MAC (not on VXLAN yet)
// or whose address the node has no route to is returned unreachable.
func (v *VXLAN) SyncRoutes(want []PeerRoute) ([]PeerRoute, error) {
	index := v.link.Attrs().Index
	var reached []PeerRoute
	unreachable, err := syncRoutes(want, func(r PeerRoute) (*netlink.Route, hop) {
		h := nextHop(r.Via)
		if r.VtepMAC == nil && h != hopLocal {
			h = hopUnreachable
		}
		if h == hopDirect || h == hopRouted {
			reached = append(reached, r)
		}
		gw := r.PodCIDR.Masked().Addr().AsSlice()
		return &netlink.Route{Dst: prefixNet(r.PodCIDR), Gw: gw, LinkIndex: index, Flags: int(netlink.FLAG_ONLINK),
			Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}, h
	})
	return unreachable, errors.Join(err, v.syncNeighbors(reached))
}

// syncNeighbors sets the neighbor and forwarding entries of the reached
// peers and removes the device's others.
func (v *VXLAN) syncNeighbors(peers []PeerRoute) error {
	index := v.link.Attrs().Index
	var errs []error
	for _, r := range peers {
		arp := &netlink.Neigh{LinkIndex: index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT, Type: unix.RTN_UNICAST,
			IP: r.PodCIDR.Masked().Addr().AsSlice(), HardwareAddr: r.VtepMAC}
		fdb := &netlink.Neigh{LinkIndex: index, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT, Flags: netlink.NTF_SELF,
			IP: r.Via.AsSlice(), HardwareAddr: r.VtepMAC}
		for _, n := range []*netlink.Neigh{arp, fdb} {
			if err := netlink.NeighSet(n); err != nil {
				errs = append(errs, fmt.Errorf("neighbor %s of %s: %w", n.IP, r.Node, err))
			}
		}
	}
	for _, family := range []int{unix.AF_INET, unix.AF_BRIDGE} {
		have, err := netlink.NeighList(index, family)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range have {
			if n.State&netlink.NUD_PERMANENT != 0 && !slices.ContainsFunc(peers, func(r PeerRoute) bool { return wantedNeighbor(n, r) }) {
				if err := netlink.NeighDel(&n); err != nil {
					errs = append(errs, fmt.Errorf("remove neighbor %s: %w", n.IP, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func wantedNeighbor(n netlink.Neigh, r PeerRoute) bool {
	if n.Family == unix.AF_BRIDGE {
		return n.HardwareAddr.String() == r.VtepMAC.String() && n.IP.Equal(r.Via.AsSlice())
	}
	return n.IP.Equal(r.PodCIDR.Masked().Addr().AsSlice())
}

// RemoveVXLAN deletes the node's VXLAN device (its routes and entries go
// with it), for a node taken down. A missing one is done.
func RemoveVXLAN() error { return removeLink(VXLANDevice) }

// removeLink deletes the network device name; a missing one is done.
func removeLink(name string) error {
	link, err := netlink.LinkByName(name)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil
	}
	if err != nil {
		return err
	}
	return netlink.LinkDel(link)
}

// linkWithAddress is the interface that holds ip.
func linkWithAddress(ip netip.Addr) (netlink.Link, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if a.IP.Equal(ip.AsSlice()) {
			return netlink.LinkByIndex(a.LinkIndex)
		}
	}
	return nil, fmt.Errorf("no interface has the node's address %s (--node-ip)", ip)
}

// sameVXLAN reports whether the existing link is the device want describes.
func sameVXLAN(link netlink.Link, want *netlink.Vxlan) bool {
	v, ok := link.(*netlink.Vxlan)
	return ok && v.VxlanId == want.VxlanId && v.VtepDevIndex == want.VtepDevIndex && v.SrcAddr.Equal(want.SrcAddr) &&
		v.Port == want.Port && v.MTU == want.MTU
}
