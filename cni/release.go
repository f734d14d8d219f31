package cni

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
)

// release DELs the attachment of rt.ContainerID and then removes its namespace;
// on DEL failure the namespace stays. list and rt are used only when the libcni
// cache has no ADD for it (list may be nil: nothing to DEL with).
func (n *Network) release(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	if err := n.delAttachment(ctx, list, rt); err != nil {
		return err
	}
	return removeNetNS(rt.NetNS)
}

// undo is release after a failed ADD: the namespace goes even if DEL fails,
// because nothing else will come back for it.
func (n *Network) undo(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	return errors.Join(n.delAttachment(ctx, list, rt), removeNetNS(rt.NetNS))
}

// delAttachment runs DEL with what ADD used, from the cache if there is one.
// Without a cache and without a namespace nothing is known, so nothing is done.
func (n *Network) delAttachment(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	present, err := isNetNS(rt.NetNS)
	if err != nil {
		return err
	}
	cachedList, cachedRT := n.cachedAttachment(rt)
	switch {
	case cachedList != nil && present:
		list, rt = cachedList, cachedRT
	case cachedList != nil:
		return n.delWithStandIn(ctx, cachedList, cachedRT)
	case !present || list == nil:
		return nil
	}
	if err := n.cni.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("cni del: %w", err)
	}
	return nil
}

// cachedAttachment returns the network list and runtime conf (args, port mappings)
// the last successful ADD for rt used, or nil if none is cached. An unreadable
// cache entry counts as none.
func (n *Network) cachedAttachment(rt *libcni.RuntimeConf) (*libcni.NetworkConfigList, *libcni.RuntimeConf) {
	data, cachedRT, err := n.cni.GetNetworkListCachedConfig(&libcni.NetworkConfigList{Name: networkName}, rt)
	if err == nil && data != nil {
		var list *libcni.NetworkConfigList
		if list, err = libcni.NetworkConfFromBytes(data); err == nil {
			return list, cachedRT
		}
	}
	if err != nil {
		slog.Warn("ignoring unreadable cni cache entry", "sandbox", rt.ContainerID, "err", err)
	}
	return nil, nil
}

// delWithStandIn runs DEL for an attachment whose namespace is gone. The bridge
// plugin (1.1.x) learns the pod's addresses, and so which ipMasq rules to remove,
// only from eth0 inside the namespace; without it, it releases the IP but leaves
// the rules. So a stand-in namespace whose eth0 carries the cached addresses is
// put at the same path for DEL, and removed after.
func (n *Network) delWithStandIn(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	cached, err := n.cni.GetNetworkListCachedResult(list, rt)
	if err != nil {
		return fmt.Errorf("read cached result: %w", err)
	}
	if cached == nil {
		return errors.New("read cached result: none")
	}
	cur, err := current.NewResultFromResult(cached)
	if err != nil {
		return fmt.Errorf("parse cached result: %w", err)
	}
	if err := removeNetNS(rt.NetNS); err != nil {
		return err
	}
	if err := createNetNS(rt.NetNS); err != nil {
		return err
	}
	defer removeNetNS(rt.NetNS) // release removes it again and reports errors
	if err := inNetNS(rt.NetNS, func() error { return addStandInLink(ifName, cur.IPs) }); err != nil {
		return fmt.Errorf("stand-in netns: %w", err)
	}
	if err := n.cni.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("cni del: %w", err)
	}
	return nil
}

// addStandInLink must run inside the namespace. It makes a veth pair, with both
// ends in the namespace: unlike a dummy link, veth needs no extra kernel module
// on a node that runs the bridge plugin.
func addStandInLink(name string, ips []*current.IPConfig) error {
	link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "-peer"}
	if err := netlink.LinkAdd(link); err != nil {
		return fmt.Errorf("add %s: %w", name, err)
	}
	for _, ip := range ips {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.Address.IP, Mask: ip.Address.Mask}}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("add address %s: %w", ip.Address.String(), err)
		}
	}
	return nil
}
