package dns

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/vishvananda/netlink"
)

// Bind puts ip on the node's loopback link, so that the node's pods reach
// the DNS server listening there without leaving the node (the NodeLocal
// DNSCache technique; lo serves where no dummy link can be made).
// Idempotent.
func Bind(ip string) error {
	addr, lo, err := loAddr(ip)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(lo, addr); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("bind %s on lo: %w", ip, err)
	}
	return nil
}

// Unbind takes ip off the loopback link; already gone is done.
func Unbind(ip string) error {
	addr, lo, err := loAddr(ip)
	if err != nil {
		return err
	}
	if err := netlink.AddrDel(lo, addr); err != nil && !errors.Is(err, syscall.EADDRNOTAVAIL) {
		return fmt.Errorf("unbind %s from lo: %w", ip, err)
	}
	return nil
}

func loAddr(ip string) (*netlink.Addr, netlink.Link, error) {
	parsed := net.ParseIP(ip)
	if parsed == nil || parsed.To4() == nil {
		return nil, nil, fmt.Errorf("cluster DNS address %q is not an IPv4 address", ip)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return nil, nil, fmt.Errorf("lo: %w", err)
	}
	return &netlink.Addr{IPNet: &net.IPNet{IP: parsed.To4(), Mask: net.CIDRMask(32, 32)}}, lo, nil
}
