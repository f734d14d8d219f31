package proxy

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// forget deletes the UDP conntrack entries of flows, through netlink's
// conntrack API (one request per flow, not one exec of conntrack per
// entry). A UDP flow otherwise keeps going to an endpoint that left, or
// being refused after the service gained one, for as long as the client
// keeps sending.
func forget(flows []staleFlow) error {
	if len(flows) == 0 {
		return nil
	}
	filters := make([]netlink.CustomConntrackFilter, 0, len(flows))
	for _, f := range flows {
		filter := &netlink.ConntrackFilter{}
		if err := filter.AddProtocol(unix.IPPROTO_UDP); err != nil {
			return err
		}
		if err := filter.AddIP(netlink.ConntrackOrigDstIP, net.ParseIP(f.serviceIP)); err != nil {
			return err
		}
		if f.endpoint != "" {
			if err := filter.AddIP(netlink.ConntrackReplySrcIP, net.ParseIP(f.endpoint)); err != nil {
				return err
			}
		} else if err := filter.AddPort(netlink.ConntrackOrigDstPort, uint16(f.port)); err != nil {
			return err
		}
		filters = append(filters, filter)
	}
	if _, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, filters...); err != nil {
		return fmt.Errorf("delete stale UDP conntrack entries: %w", err)
	}
	return nil
}
