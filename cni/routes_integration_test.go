package cni

import (
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/skiff-lab/skiff/test/netnstest"
)

// TestSyncRoutes keeps host-gw routes in a network namespace of the
// test's own: a veth end on 10.249.7.0/24 stands for the node's link to
// its peers. Nothing is sent anywhere.
func TestSyncRoutes(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("integration test: needs root and no -short")
	}
	netnstest.Enter(t, netnstest.New(t))
	link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lab0"}, PeerName: "lab1"}
	must(t, netlink.LinkAdd(link))
	addr, _ := netlink.ParseAddr("10.249.7.1/24")
	must(t, netlink.AddrAdd(link, addr))
	must(t, netlink.LinkSetUp(link))
	peer, _ := netlink.LinkByName("lab1")
	must(t, netlink.LinkSetUp(peer))
	foreign, _ := netlink.ParseIPNet("10.249.99.0/24") // an admin's route: never touched
	must(t, netlink.RouteAdd(&netlink.Route{Dst: foreign, Gw: net.ParseIP("10.249.7.9")}))

	n2 := PeerRoute{Node: "n2", PodCIDR: netip.MustParsePrefix("10.248.2.0/24"), Via: netip.MustParseAddr("10.249.7.2")}
	n3 := PeerRoute{Node: "n3", PodCIDR: netip.MustParsePrefix("10.248.3.0/24"), Via: netip.MustParseAddr("10.249.8.3")}
	self := PeerRoute{Node: "self", PodCIDR: netip.MustParsePrefix("10.248.1.0/24"), Via: netip.MustParseAddr("10.249.7.1")}
	unreachable := mustSync(t, n2, n3, self)
	if len(unreachable) != 1 || unreachable[0].Node != "n3" {
		t.Errorf("unreachable = %v, want n3 only (10.249.8.3 is on no connected subnet)", unreachable)
	}
	checkRoutes(t, map[string]string{"10.248.2.0/24": "10.249.7.2"})

	n2.Via = netip.MustParseAddr("10.249.7.20") // the node's address changed
	mustSync(t, n2)
	checkRoutes(t, map[string]string{"10.248.2.0/24": "10.249.7.20"})

	must(t, RemoveRoutes())
	checkRoutes(t, map[string]string{})
	if r, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: foreign}, netlink.RT_FILTER_DST); err != nil || len(r) != 1 {
		t.Errorf("the foreign route is gone: %v %v", r, err)
	}
}

func mustSync(t *testing.T, want ...PeerRoute) []PeerRoute {
	t.Helper()
	unreachable, err := SyncRoutes(want)
	if err != nil {
		t.Fatal(err)
	}
	return unreachable
}

// checkRoutes compares the namespace's skiff routes with want (pod CIDR →
// gateway).
func checkRoutes(t *testing.T, want map[string]string) {
	t.Helper()
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range routes {
		got[r.Dst.String()] = r.Gw.String()
	}
	if len(got) != len(want) {
		t.Fatalf("skiff routes %v, want %v", got, want)
	}
	for dst, gw := range want {
		if got[dst] != gw {
			t.Errorf("route to %s via %q, want %s (all: %v)", dst, got[dst], gw, got)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
