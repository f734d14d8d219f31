package cni

import (
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/skiff-lab/skiff/test/netnstest"
)

// TestVXLAN joins two network namespaces of the test's own, "nodes" on
// 10.249.9.0/24, with the VXLAN backend: a connection from node a's VTEP
// address reaches node b's through the encapsulation, with its source
// address; a sync without peers removes every route and entry.
func TestVXLAN(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("integration test: needs root and no -short")
	}
	a, b := netnstest.New(t), netnstest.New(t)
	do(t, a, func() {
		must(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer"}))
	})
	do(t, a, func() {
		peer, err := netlink.LinkByName("peer")
		must(t, err)
		must(t, netlink.LinkSetNsFd(peer, int(b)))
	})
	do(t, b, func() {
		peer, err := netlink.LinkByName("peer")
		must(t, err)
		must(t, netlink.LinkSetName(peer, "eth0"))
	})
	nodes := []struct {
		h       netns.NsHandle
		ip      string
		podCIDR string
		vxlan   *VXLAN
	}{{a, "10.249.9.1", "10.248.1.0/24", nil}, {b, "10.249.9.2", "10.248.2.0/24", nil}}
	for i := range nodes {
		n := &nodes[i]
		do(t, n.h, func() {
			link, err := netlink.LinkByName("eth0")
			must(t, err)
			addr, _ := netlink.ParseAddr(n.ip + "/24")
			must(t, netlink.AddrAdd(link, addr))
			must(t, netlink.LinkSetUp(link))
			n.vxlan, err = EnsureVXLAN(netip.MustParseAddr(n.ip), netip.MustParsePrefix(n.podCIDR))
			must(t, err)
		})
	}
	for i, n := range nodes {
		p := nodes[1-i]
		peer := PeerRoute{Node: "peer", PodCIDR: netip.MustParsePrefix(p.podCIDR), Via: netip.MustParseAddr(p.ip), VtepMAC: p.vxlan.MAC()}
		do(t, n.h, func() {
			unreachable, err := n.vxlan.SyncRoutes([]PeerRoute{peer})
			if err != nil || len(unreachable) > 0 {
				t.Fatalf("sync: %v, unreachable %v", err, unreachable)
			}
		})
	}

	var ln net.Listener
	do(t, b, func() {
		var err error
		ln, err = net.Listen("tcp", "10.248.2.0:7777")
		must(t, err)
	})
	defer ln.Close()
	accepted := make(chan string, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}
	}()
	do(t, a, func() {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("10.248.1.0")}}
		c, err := d.Dial("tcp", "10.248.2.0:7777")
		must(t, err)
		c.Close()
	})
	select {
	case src := <-accepted:
		if src != "10.248.1.0" {
			t.Errorf("b saw the connection from %s, want a's VTEP address", src)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no connection through the VXLAN")
	}

	do(t, a, func() {
		_, err := nodes[0].vxlan.SyncRoutes(nil)
		must(t, err)
		routes, _ := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
		fdb, _ := netlink.NeighList(nodes[0].vxlan.link.Attrs().Index, unix.AF_BRIDGE)
		arp, _ := netlink.NeighList(nodes[0].vxlan.link.Attrs().Index, unix.AF_INET)
		if len(routes)+len(fdb)+len(arp) > 0 {
			t.Errorf("left after a sync without peers: routes %v, fdb %v, neighbors %v", routes, fdb, arp)
		}
		must(t, RemoveVXLAN())
		must(t, RemoveVXLAN())
	})
}

// do runs f inside h.
func do(t *testing.T, h netns.NsHandle, f func()) {
	t.Helper()
	if err := netnstest.Do(h, f); err != nil {
		t.Fatal(err)
	}
}
