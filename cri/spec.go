package cri

import (
	"fmt"
	"slices"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Mount binds a host path into a container.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
	// Propagation is the mount's propagation: "rprivate" (the default),
	// "rslave" (host mounts appear in the container) or "rshared" (both ways).
	Propagation string
}

// Resources are a container's cgroup settings, already converted from
// Kubernetes quantities (zero means unset).
type Resources struct {
	CPUShares   uint64
	CPUQuota    int64 // microseconds per CPUPeriod
	CPUPeriod   uint64
	MemoryLimit int64 // bytes
	// Source is what the caller made these settings from (opaque here),
	// kept with the container and reported by List as Container.Resources,
	// so that the caller can tell later what a running container has.
	Source string
}

// linux is r as an update of a running container's cgroup: unset values
// are left as they are.
func (r Resources) linux() *specs.LinuxResources {
	out := &specs.LinuxResources{CPU: &specs.LinuxCPU{}}
	if r.CPUShares > 0 {
		out.CPU.Shares = &r.CPUShares
	}
	if r.CPUQuota > 0 {
		out.CPU.Quota, out.CPU.Period = &r.CPUQuota, &r.CPUPeriod
	}
	if r.MemoryLimit > 0 {
		out.Memory = &specs.LinuxMemory{Limit: &r.MemoryLimit}
	}
	return out
}

// ContainerSpec is what the agent asks for one container attempt.
type ContainerSpec struct {
	Pod        PodRef
	SandboxID  string
	Name       string
	Attempt    int
	Image      string // a normalized reference already in the store
	Command    []string
	Args       []string
	Env        []string // KEY=VALUE, later entries win
	WorkingDir string
	Mounts     []Mount
	Resources  Resources
	Hostname   string
	Security   *Security // nil: what Kubernetes gives a container that asks for nothing
	Stdio      Stdio
}

// annotationShimGroup makes the runc shim of a pod's sandbox serve the pod's
// containers too (as containerd's CRI plugin does with its sandbox-id
// annotation): one shim process per pod instead of one per container.
const annotationShimGroup = "io.containerd.runc.v2.group"

// argsOpts sets the process's args by Kubernetes' rules: command replaces
// the image's entrypoint and cmd; args alone replace only its cmd.
func argsOpts(img oci.Image, command, args []string) []oci.SpecOpts {
	if len(command) > 0 {
		return []oci.SpecOpts{oci.WithImageConfig(img), oci.WithProcessArgs(append(slices.Clone(command), args...)...)}
	}
	return []oci.SpecOpts{oci.WithImageConfigArgs(img, args)}
}

// containerOpts builds an app container's spec: containerd's default spec,
// then the image config, then what the pod asks for, in that order (later
// options override earlier ones).
func containerOpts(img oci.Image, spec ContainerSpec, netns string, sandboxPid uint32, cgroup string) []oci.SpecOpts {
	opts := []oci.SpecOpts{oci.WithDefaultSpec(), oci.WithDefaultUnixDevices}
	opts = append(opts, argsOpts(img, spec.Command, spec.Args)...)
	opts = append(opts, oci.WithEnv(append([]string{"HOSTNAME=" + spec.Hostname}, spec.Env...)))
	if spec.Stdio.TTY {
		opts = append(opts, oci.WithTTY)
	}
	if spec.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(spec.WorkingDir))
	}
	opts = append(opts, securityOpts(spec.Security)...)
	opts = append(opts, namespaceOpts(netns, sandboxPid)...)
	opts = append(opts, cgroupMount(spec.Security), mountOpts(spec.Mounts), oci.WithCgroup(cgroup))
	opts = append(opts, oci.WithAnnotations(map[string]string{annotationShimGroup: spec.SandboxID}))
	return append(opts, resourceOpts(spec.Resources)...)
}

// namespaceOpts joins the sandbox's network, IPC and UTS namespaces. A
// sandbox without a network namespace path (a host-network pod) is joined
// in the network namespace it runs in, the node's.
func namespaceOpts(netns string, sandboxPid uint32) []oci.SpecOpts {
	proc := func(kind string) string { return fmt.Sprintf("/proc/%d/ns/%s", sandboxPid, kind) }
	if netns == "" {
		netns = proc("net")
	}
	return []oci.SpecOpts{
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netns}),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: proc("ipc")}),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UTSNamespace, Path: proc("uts")}),
	}
}

// resourceOpts sets the cgroup limits that are set in r.
func resourceOpts(r Resources) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if r.CPUShares > 0 {
		opts = append(opts, oci.WithCPUShares(r.CPUShares))
	}
	if r.CPUQuota > 0 {
		opts = append(opts, oci.WithCPUCFS(r.CPUQuota, r.CPUPeriod))
	}
	if r.MemoryLimit > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(r.MemoryLimit)))
	}
	return opts
}

// cgroupMount shows the container its own cgroup at /sys/fs/cgroup, as
// containerd's CRI plugin does for the kubelet: read-only, writable for a
// privileged container.
func cgroupMount(sec *Security) oci.SpecOpts {
	mode := "ro"
	if sec != nil && sec.Privileged {
		mode = "rw"
	}
	return oci.WithMounts([]specs.Mount{{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"nosuid", "noexec", "nodev", "relatime", mode}}})
}

func mountOpts(mounts []Mount) oci.SpecOpts {
	var out []specs.Mount
	for _, m := range mounts {
		options := []string{"rbind", "rprivate", "rw"}
		if m.Propagation != "" {
			options[1] = m.Propagation
		}
		if m.ReadOnly {
			options[2] = "ro"
		}
		out = append(out, specs.Mount{Type: "bind", Source: m.Source, Destination: m.Destination, Options: options})
	}
	return oci.WithMounts(out)
}
