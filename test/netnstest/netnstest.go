// Package netnstest runs test code inside a network namespace: sockets
// made there and commands started from there (iptables, sysctls, netlink)
// act on that namespace.
package netnstest

import (
	"fmt"
	"net"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Do runs f on this goroutine's OS thread inside h, then returns the
// thread to the namespace it was in.
func Do(h netns.NsHandle, f func()) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("current namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(h); err != nil {
		return fmt.Errorf("enter namespace: %w", err)
	}
	defer func() { _ = netns.Set(orig) }()
	f()
	return nil
}

// New makes a network namespace of the test's own, closed at tb's
// cleanup (and gone once nothing uses it), and leaves the calling thread
// in the namespace it was in.
func New(tb testing.TB) netns.NsHandle {
	tb.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		tb.Fatal(err)
	}
	defer orig.Close()
	h, err := netns.New() // moves this thread into it
	if serr := netns.Set(orig); serr != nil {
		panic(serr) // the thread is in the wrong namespace: it must not run anything else
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// Enter runs the rest of tb on this OS thread inside h, until tb's
// cleanup. Each goroutine enters on its own: a sub-test or sub-benchmark
// runs on another.
func Enter(tb testing.TB, h netns.NsHandle) {
	tb.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		tb.Fatal(err)
	}
	if err := netns.Set(h); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = netns.Set(orig)
		_ = orig.Close()
		runtime.UnlockOSThread()
	})
}

// AnswerUDP answers every datagram to UDP port inside h with reply, until
// tb's cleanup: a UDP server where the namespace's own programs have none.
func AnswerUDP(tb testing.TB, h netns.NsHandle, port int, reply string) {
	tb.Helper()
	var conn net.PacketConn
	err := Do(h, func() {
		var err error
		conn, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		if err != nil {
			tb.Fatal(err)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteTo([]byte(reply), from)
		}
	}()
}

// Uplink sets up the calling thread's network namespace as a machine's
// network: lo up, with loAddrs added to it, and an uplink (a veth pair,
// uplink0 and its peer uplink1, both up) with addr (a CIDR) on uplink0 and
// the default route via gw. The route leads nowhere: the namespace has no
// way out.
func Uplink(tb testing.TB, addr, gw string, loAddrs ...string) {
	tb.Helper()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		tb.Fatal(err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "uplink0"}, PeerName: "uplink1"}
	if err := netlink.LinkAdd(veth); err != nil {
		tb.Fatal(err)
	}
	peer, err := netlink.LinkByName("uplink1")
	if err != nil {
		tb.Fatal(err)
	}
	for link, addrs := range map[netlink.Link][]string{lo: loAddrs, veth: {addr}, peer: nil} {
		for _, s := range addrs {
			a, err := netlink.ParseAddr(s)
			if err != nil {
				tb.Fatal(err)
			}
			if err := netlink.AddrAdd(link, a); err != nil {
				tb.Fatalf("%s on %s: %v", s, link.Attrs().Name, err)
			}
		}
		if err := netlink.LinkSetUp(link); err != nil {
			tb.Fatal(err)
		}
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: veth.Attrs().Index, Gw: net.ParseIP(gw)}); err != nil {
		tb.Fatalf("default route via %s: %v", gw, err)
	}
}
