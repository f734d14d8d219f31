package host_test

import (
	"net/netip"
	"os"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/skiff-lab/skiff/host"
	"github.com/skiff-lab/skiff/test/netnstest"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func metric(m int) *int { return &m }

func TestChooseAddress(t *testing.T) {
	managed, err := host.ManagedPrefixes("10.96.0.0/16", "10.244.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	lo := host.Interface{Name: "lo", Up: true, Loopback: true, Addrs: addrs("127.0.0.1", "10.96.0.10")}
	bridge := host.Interface{Name: "skiff0", Up: true, Addrs: addrs("10.244.0.1")}
	eth := host.Interface{Name: "eth0", Up: true, DefaultRoute: metric(0), Addrs: addrs("192.168.7.20")}
	for _, tc := range []struct {
		name   string
		ifaces []host.Interface
		want   string
	}{
		{"the default route's interface", []host.Interface{lo, {Name: "eth1", Up: true, Addrs: addrs("172.16.0.2")}, eth}, "192.168.7.20"},
		{"the DNS address left on lo is not chosen", []host.Interface{lo}, "127.0.0.1"},
		{"nor the pod bridge before the uplink", []host.Interface{lo, bridge, eth}, "192.168.7.20"},
		{"nor the pod bridge when it holds the default route", []host.Interface{lo,
			{Name: "skiff0", Up: true, DefaultRoute: metric(0), Addrs: addrs("10.244.0.1")}, {Name: "eth1", Up: true, Addrs: addrs("172.16.0.2")}}, "172.16.0.2"},
		{"the lowest metric first", []host.Interface{lo,
			{Name: "wlan0", Up: true, DefaultRoute: metric(600), Addrs: addrs("192.168.1.5")}, {Name: "eth0", Up: true, DefaultRoute: metric(100), Addrs: addrs("10.1.0.5")}}, "10.1.0.5"},
		{"an interface that is down is skipped", []host.Interface{lo, {Name: "eth0", DefaultRoute: metric(0), Addrs: addrs("10.1.0.5")}, {Name: "eth1", Up: true, Addrs: addrs("10.2.0.5")}}, "10.2.0.5"},
		{"link-local and IPv6 are skipped", []host.Interface{lo, {Name: "eth0", Up: true, DefaultRoute: metric(0), Addrs: addrs("169.254.1.1", "fd00::1", "10.3.0.5")}}, "10.3.0.5"},
		{"nothing but loopback", []host.Interface{lo, bridge}, "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := host.ChooseAddress(tc.ifaces, managed); got.String() != tc.want {
				t.Errorf("chose %s, want %s", got, tc.want)
			}
		})
	}
}

// TestDefaultAddressInANamespace reads a real machine's interfaces: a
// network namespace with the cluster DNS address on lo, a pod bridge, and
// an uplink holding the default route.
func TestDefaultAddressInANamespace(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("integration: needs root for a network namespace")
	}
	netnstest.Enter(t, netnstest.New(t))
	netnstest.Uplink(t, "10.123.0.2/24", "10.123.0.1", "10.96.0.10/32")
	// The pod bridge, with the pod gateway's address.
	bridge := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "skiff0"}}
	if err := netlink.LinkAdd(bridge); err != nil {
		t.Fatal(err)
	}
	a, _ := netlink.ParseAddr("10.244.0.1/24")
	if err := netlink.AddrAdd(bridge, a); err != nil || netlink.LinkSetUp(bridge) != nil {
		t.Fatalf("bridge: %v", err)
	}
	managed, _ := host.ManagedPrefixes("10.96.0.0/16", "10.244.0.0/16")
	got, err := host.DefaultAddress(managed...)
	if err != nil || got.String() != "10.123.0.2" {
		t.Errorf("DefaultAddress = %s, %v; want the uplink's 10.123.0.2", got, err)
	}
}
