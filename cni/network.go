package cni

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
)

// Network attaches pod sandboxes to the node's bridge. See the package doc for
// what is safe concurrently.
type Network struct {
	cfg Config
	cni *libcni.CNIConfig
}

// New returns a Network for cfg (zero fields take defaults). It touches nothing on
// disk; Configure writes the conflist.
func New(cfg Config) *Network {
	cfg = cfg.withDefaults()
	return &Network{cfg: cfg, cni: libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.CacheDir, nil)}
}

// Result is a pod's network: the namespace to start the sandbox in and its IPs.
type Result struct {
	NetNSPath string
	IPs       []net.IP
}

// Setup creates the netns <NetNSDir>/<ID> and runs CNI ADD. Idempotent for the same
// ID: a pod already set up (namespace present, ADD cached) gets its cached result
// back; leftovers of an interrupted Setup are torn down first. On any failure it
// undoes what it did (DEL, remove netns) and returns the error wrapped with
// context, so nothing half-created remains.
func (n *Network) Setup(ctx context.Context, pod Pod) (Result, error) {
	res, err := n.setup(ctx, pod)
	if err != nil {
		return Result{}, fmt.Errorf("set up network for sandbox %s: %w", pod.ID, err)
	}
	return res, nil
}

func (n *Network) setup(ctx context.Context, pod Pod) (Result, error) {
	if err := validateID(pod.ID); err != nil {
		return Result{}, err
	}
	rt, err := runtimeConf(pod, n.NetNSPath(pod.ID))
	if err != nil {
		return Result{}, err
	}
	if res, ok, err := n.adopt(rt); err != nil || ok {
		return res, err
	}
	list, err := n.loadConfList()
	if err != nil {
		return Result{}, err
	}
	fresh, err := unattached(rt.NetNS)
	if err != nil {
		return Result{}, err
	}
	if !fresh {
		if err := n.release(ctx, list, rt); err != nil {
			return Result{}, fmt.Errorf("clean up earlier attempt: %w", err)
		}
	}
	if list, err = pluginsFor(list, rt); err != nil {
		return Result{}, err
	}
	res, err := n.add(ctx, list, rt)
	if err != nil {
		if uerr := n.undo(ctx, list, rt); uerr != nil {
			return Result{}, fmt.Errorf("%w (undo: %w)", err, uerr)
		}
		return Result{}, err
	}
	return res, nil
}

// adopt returns the cached result of a completed Setup whose namespace is still
// there.
func (n *Network) adopt(rt *libcni.RuntimeConf) (Result, bool, error) {
	if ok, err := isNetNS(rt.NetNS); err != nil || !ok {
		return Result{}, false, err
	}
	list, cachedRT := n.cachedAttachment(rt)
	if list == nil {
		return Result{}, false, nil
	}
	cached, err := n.cni.GetNetworkListCachedResult(list, cachedRT)
	if err != nil || cached == nil {
		return Result{}, false, err
	}
	res, err := newResult(rt.NetNS, cached)
	return res, err == nil, err
}

// CreateNetNS creates and readies (lo up, IPv6 DAD off) the network
// namespace of sandbox id without attaching it, so that the sandbox can be
// started in it while Setup attaches it. Idempotent: a namespace that exists
// and is not attached yet is kept. Teardown removes it.
func (n *Network) CreateNetNS(id string) (string, error) {
	if err := validateID(id); err != nil {
		return "", err
	}
	path := n.NetNSPath(id)
	if err := ensureNetNS(path); err != nil {
		return "", fmt.Errorf("create netns for sandbox %s: %w", id, err)
	}
	return path, nil
}

// ensureNetNS creates and readies the namespace at path unless it exists.
func ensureNetNS(path string) error {
	if ok, err := isNetNS(path); err != nil || ok {
		return err
	}
	if err := createNetNS(path); err != nil {
		return err
	}
	if err := prepareNetNS(path); err != nil {
		return fmt.Errorf("prepare netns: %w", err)
	}
	return nil
}

// unattached says the namespace at path is missing or has no pod interface
// yet (made by CreateNetNS): ADD may go ahead without cleaning up first.
func unattached(path string) (bool, error) {
	if ok, err := isNetNS(path); err != nil || !ok {
		return !ok, err
	}
	found := false
	err := inNetNS(path, func() error {
		_, err := netlink.LinkByName(ifName)
		found = err == nil
		return nil
	})
	return !found, err
}

// add creates the namespace if needed, and runs ADD. The caller undoes on error.
func (n *Network) add(ctx context.Context, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) (Result, error) {
	if err := ensureNetNS(rt.NetNS); err != nil {
		return Result{}, err
	}
	res, err := n.cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		return Result{}, fmt.Errorf("cni add: %w", err)
	}
	return newResult(rt.NetNS, res)
}

func newResult(netnsPath string, res types.Result) (Result, error) {
	cur, err := current.NewResultFromResult(res)
	if err != nil {
		return Result{}, fmt.Errorf("parse cni result: %w", err)
	}
	out := Result{NetNSPath: netnsPath}
	for _, ip := range cur.IPs {
		out.IPs = append(out.IPs, ip.Address.IP)
	}
	return out, nil
}

// Teardown runs CNI DEL (from the cached result, so it works after a restart and
// when the netns is already gone) and removes the netns. "Not found" is done, not
// an error. Without a cached ADD, a namespace that is still there is DELeted with
// the current conflist. If DEL fails the namespace is kept, so a retry sees the
// same state.
func (n *Network) Teardown(ctx context.Context, id string) error {
	if err := validateID(id); err != nil {
		return fmt.Errorf("tear down network for sandbox %s: %w", id, err)
	}
	list, err := n.loadConfList()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("tear down network for sandbox %s: %w", id, err)
	}
	if err := n.release(ctx, list, bareRuntimeConf(id, n.NetNSPath(id))); err != nil {
		return fmt.Errorf("tear down network for sandbox %s: %w", id, err)
	}
	return nil
}

// RemoveBridge deletes the pods' bridge, for a node taken down; its pods'
// network namespaces must be torn down first. A missing one is done.
func (n *Network) RemoveBridge() error { return removeLink(n.cfg.Bridge) }

// TeardownAll tears down every pod network namespace, telling found of
// each first: a node taken down, or a test's leftovers.
func (n *Network) TeardownAll(ctx context.Context, found func(id string)) error {
	ids, err := n.List()
	errs := []error{err}
	for _, id := range ids {
		found(id)
		errs = append(errs, n.Teardown(ctx, id))
	}
	return errors.Join(errs...)
}
