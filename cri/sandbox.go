package cri

import (
	"context"
	"fmt"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
)

// SandboxSpec is what the agent asks for a pod's sandbox.
type SandboxSpec struct {
	Pod      PodRef
	ID       string // chosen by the caller: the network namespace is named after it too
	Image    string // the pause image
	Hostname string
	NetNS    string   // path of the pod's network namespace
	IPs      []string // the pod's IPs, kept with the sandbox for status after a restart

	// Host names the node's namespaces the pod shares. With Host.Network,
	// NetNS is empty and Hostname unused: the pod has the node's.
	Host HostNamespaces
	// Sysctls are set in the pod's namespaces; which are allowed is the
	// caller's policy.
	Sysctls map[string]string
	// Privileged says a container of the pod is privileged: it gets a
	// writable /sys only if the sandbox has one.
	Privileged bool
}

// RunSandbox creates and starts the pause container holding the pod's
// namespaces. On failure nothing is left behind.
func (r *Runtime) RunSandbox(ctx context.Context, spec SandboxSpec) (err error) {
	ctx = r.ctx(ctx)
	img, err := r.client.GetImage(ctx, spec.Image)
	if err != nil {
		return fmt.Errorf("sandbox image %s: %w", spec.Image, err)
	}
	labels := spec.Pod.labels(KindSandbox)
	labels[LabelNetNS] = spec.NetNS
	labels[LabelImageRef] = spec.Image
	labels[LabelPodIPs] = strings.Join(spec.IPs, ",")
	opts := []oci.SpecOpts{oci.WithDefaultSpec(), oci.WithImageConfig(img), oci.WithCgroup(r.cgroup(spec.Pod.UID, spec.ID))}
	opts = append(opts, sandboxSecurityOpts(spec)...)
	c, err := r.client.NewContainer(ctx, spec.ID, containerd.WithImage(img),
		containerd.WithNewSnapshot(spec.ID, img), containerd.WithContainerLabels(labels),
		containerd.WithNewSpec(opts...), r.runtimeOpt())
	if err != nil {
		return fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	defer func() {
		if err != nil {
			_ = r.remove(ctx, c)
		}
	}()
	task, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		return fmt.Errorf("create sandbox task %s: %w", spec.ID, err)
	}
	if err := task.Start(ctx); err != nil {
		return fmt.Errorf("start sandbox %s: %w", spec.ID, err)
	}
	// No start time is recorded for sandboxes: nothing reads it, and every
	// label write is a commit of containerd's metadata store.
	return nil
}

// PodCgroup is the cgroup path of a pod's parent cgroup under root (the
// agent's --cgroup-root), as runc is given it: <root>/pod<uid>. runc's
// cgroupfs driver makes it under every v1 controller's mount, or under the
// v2 root.
func PodCgroup(root, podUID string) string { return root + "/pod" + podUID }

// ContainerCgroup is the cgroup path of one container (or sandbox) of a
// pod: <root>/pod<uid>/<container ID>.
func ContainerCgroup(root, podUID, id string) string { return PodCgroup(root, podUID) + "/" + id }

// cgroup is the cgroup path of one container under its pod's parent cgroup.
func (r *Runtime) cgroup(podUID, id string) string {
	return ContainerCgroup(r.cfg.CgroupRoot, podUID, id)
}

func (r *Runtime) podCgroup(podUID string) string { return PodCgroup(r.cfg.CgroupRoot, podUID) }

// SetSandboxIPs records the pod's IPs with its sandbox, for when the network
// was attached after the sandbox started.
func (r *Runtime) SetSandboxIPs(ctx context.Context, id string, ips []string) error {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("sandbox %s: %w", id, err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{LabelPodIPs: strings.Join(ips, ",")}); err != nil {
		return fmt.Errorf("record IPs of sandbox %s: %w", id, err)
	}
	return nil
}
