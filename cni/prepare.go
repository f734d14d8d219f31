package cni

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/vishvananda/netlink"
)

// dadSysctls turn IPv6 duplicate address detection off for every interface the
// namespace will get: pod addresses come from IPAM, and DAD would only delay them.
var dadSysctls = []string{
	"/proc/sys/net/ipv6/conf/all/accept_dad",
	"/proc/sys/net/ipv6/conf/default/accept_dad",
}

// prepareNetNS readies a new namespace for CNI ADD: loopback up, IPv6 DAD off.
// It is idempotent.
func prepareNetNS(path string) error {
	return inNetNS(path, func() error {
		if err := loopbackUp(); err != nil {
			return err
		}
		return disableDAD()
	})
}

// loopbackUp must run inside the namespace: netlink opens its socket there.
func loopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// disableDAD must run inside the namespace: /proc/sys/net shows the namespace of
// the calling thread. Without IPv6 the files do not exist, which is fine.
func disableDAD() error {
	for _, path := range dadSysctls {
		err := os.WriteFile(path, []byte("0"), 0o644)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("disable ipv6 dad: %w", err)
		}
	}
	return nil
}
