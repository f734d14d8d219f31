package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/dns"
	"github.com/skiff-lab/skiff/proxy"
)

// Teardown removes what an agent with cfg made on this machine, for
// `skiff uninstall` and the tests: every pod (containers, files, volumes,
// logs, cgroup), every pod network namespace, the pod masquerade rule, the
// bridge and the pods' parent cgroup, and stops the agent's containerd.
// The agent must not be running. left is told of each container and
// network namespace found; a drained node has none. Tearing down twice is
// harmless. What the node's services keep on the machine is Cleanup's.
func Teardown(ctx context.Context, cfg Config, left func(what string)) error {
	cfg.setDefaults()
	address, d, err := startContainerd(ctx, cfg)
	if err != nil {
		return err
	}
	errs := []error{removePods(ctx, cfg, address, left)}
	if d != nil {
		errs = append(errs, d.Stop(ctx))
	}
	errs = append(errs, removeNetwork(ctx, cfg, left), cri.RemoveCgroupRoot(cfg.CgroupRoot), cri.UnmountUnder(cfg.dir()))
	return errors.Join(errs...)
}

// removePods removes every container in the agent's containerd namespace
// and then what their pods kept on the node.
func removePods(ctx context.Context, cfg Config, address string, left func(string)) error {
	rt, err := connectRuntime(ctx, cfg, address)
	if err != nil {
		return err
	}
	defer rt.Close()
	return rt.RemoveAll(ctx, func(c cri.Container) {
		left(fmt.Sprintf("%s %s of pod %s/%s", c.Kind, c.Name, c.Pod.Namespace, c.Pod.Name))
	})
}

// removeNetwork tears down every pod network namespace, then the pod
// masquerade rule and the bridge.
func removeNetwork(ctx context.Context, cfg Config, left func(string)) error {
	net := cni.New(cniConfig(cfg))
	return errors.Join(
		net.TeardownAll(ctx, func(id string) { left("network namespace " + id) }),
		net.RemoveMasquerade(), net.RemoveBridge())
}

// Cleanup removes what the node's services leave in place across the
// agent's restarts, for `skiff agent --cleanup` and `skiff uninstall`: the
// service proxy's chains and rules, the cluster DNS address (cfg.ClusterDNS,
// if any), the routes to other nodes' pods and the VXLAN device. These are
// the machine's, whichever agent made them, so Teardown leaves them alone.
// What is already gone is done.
func Cleanup(ctx context.Context, cfg Config) error {
	err := errors.Join(proxy.Cleanup(ctx), cni.RemoveRoutes(), cni.RemoveVXLAN())
	if cfg.ClusterDNS != "" {
		err = errors.Join(err, dns.Unbind(cfg.ClusterDNS))
	}
	return err
}
