package cri

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ErrRunAsNonRoot says a container that must not run as root would, or might:
// CreateContainer refuses it before anything is created. The errors that
// match it carry the kubelet's message for the case.
var ErrRunAsNonRoot = errors.New("container has runAsNonRoot and would run as root")

// HostNamespaces says which of the node's namespaces a pod shares instead of
// having its own.
type HostNamespaces struct {
	Network bool // no network namespace, no CNI: the pod's IP is the node's
	PID     bool
	IPC     bool
}

// SeccompType names a seccomp profile the way Kubernetes does.
type SeccompType string

// The seccomp profile types; the zero value is SeccompRuntimeDefault.
const (
	SeccompRuntimeDefault SeccompType = "RuntimeDefault" // containerd's default profile
	SeccompUnconfined     SeccompType = "Unconfined"     // no filter
	SeccompLocalhost      SeccompType = "Localhost"      // a JSON profile on the node
)

// Seccomp is a container's seccomp profile.
type Seccomp struct {
	Type SeccompType
	// Profile is the JSON profile file of a Localhost profile. A relative
	// path is taken under the runtime's <StateDir>/seccomp (as the kubelet
	// takes it under <root-dir>/seccomp) and may not leave it.
	Profile string
}

// Security is a container's security context, already merged from the pod's
// and the container's by Kubernetes' rules. The zero value (and a nil
// *Security) is what Kubernetes gives a container that asks for nothing:
// the image's user, containerd's default capabilities, privilege escalation
// allowed, a writable root filesystem and the RuntimeDefault seccomp profile.
type Security struct {
	RunAsUser    *int64 // overrides the image's user
	RunAsGroup   *int64 // overrides the primary group (of RunAsUser or the image's user)
	RunAsNonRoot bool   // refuse (ErrRunAsNonRoot) to run as uid 0 or as a user that cannot be checked
	// SupplementalGroups are added to the groups the image's /etc/group
	// gives the user (fsGroup belongs here too).
	SupplementalGroups []int64
	ReadOnlyRootfs     bool
	// Privileged gets every capability the agent has, every host device, no
	// seccomp filter, no masked paths and a writable /sys (in a pod network
	// only if the sandbox is privileged too); AddCaps, DropCaps,
	// NoNewPrivileges and Seccomp are then ignored.
	Privileged bool
	// AddCaps and DropCaps are Kubernetes capability names (NET_ADMIN, or
	// CAP_NET_ADMIN); "ALL" stands for every capability. ALL is applied
	// before single names, so drop ALL + add X leaves only X.
	AddCaps, DropCaps []string
	NoNewPrivileges   bool
	Seccomp           Seccomp
	// HostPID and HostIPC match the pod's sandbox (SandboxSpec.Host): the
	// container then shares the node's PID namespace, and the node's
	// /dev/shm. Containers always join the sandbox's network, so a host
	// network needs nothing here.
	HostPID, HostIPC bool
}

// securityOpts applies sec to a spec that already has the image's config,
// in this order: user and groups, capabilities (or privileged), no_new_privs,
// read-only root, host namespaces, then seccomp, whose default profile
// depends on the capabilities.
func securityOpts(sec *Security) []oci.SpecOpts {
	if sec == nil {
		sec = &Security{}
	}
	opts := []oci.SpecOpts{withUser(sec.RunAsUser, sec.RunAsGroup), withSupplementalGroups(sec.SupplementalGroups)}
	if sec.Privileged {
		opts = append(opts, withPrivileged)
	} else {
		opts = append(opts, withCapabilities(sec.AddCaps, sec.DropCaps))
	}
	opts = append(opts, withNoNewPrivileges(sec.NoNewPrivileges && !sec.Privileged))
	if sec.ReadOnlyRootfs {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if sec.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	if sec.HostIPC {
		opts = append(opts, withHostShm)
	}
	if !sec.Privileged {
		opts = append(opts, withSeccomp(sec.Seccomp))
	}
	return opts
}

// withUser overrides the user and primary group the image config set, then
// reads the supplementary groups the image's /etc/group gives the new user
// (uid alone takes its group from the image's /etc/passwd, else 0; gid alone
// keeps the image's user). Nothing changes when both are nil.
func withUser(uid, gid *int64) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if uid == nil && gid == nil {
			return nil
		}
		for _, id := range []*int64{uid, gid} {
			if id != nil && (*id < 0 || *id > math.MaxInt32) {
				return fmt.Errorf("user or group id %d out of range", *id)
			}
		}
		var set oci.SpecOpts
		switch {
		case gid == nil:
			set = oci.WithUserID(uint32(*uid))
		case uid == nil:
			current := uint32(0)
			if s.Process != nil {
				current = s.Process.User.UID
			}
			set = oci.WithUIDGID(current, uint32(*gid))
		default:
			set = oci.WithUIDGID(uint32(*uid), uint32(*gid))
		}
		if err := set(ctx, client, c, s); err != nil {
			return err
		}
		return oci.WithAdditionalGIDs(strconv.FormatUint(uint64(s.Process.User.UID), 10))(ctx, client, c, s)
	}
}

// withSupplementalGroups adds groups to the process's supplementary groups,
// which stay sorted and without duplicates.
func withSupplementalGroups(groups []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(groups) == 0 {
			return nil
		}
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		gids := s.Process.User.AdditionalGids
		for _, g := range groups {
			gids = append(gids, uint32(g))
		}
		slices.Sort(gids)
		s.Process.User.AdditionalGids = slices.Compact(gids)
		return nil
	}
}

// withPrivileged is what containerd's CRI plugin gives a privileged container.
var withPrivileged = oci.Compose(oci.WithPrivileged, oci.WithHostDevices, oci.WithAllDevicesAllowed)

// withCapabilities changes the spec's capabilities as containerd's CRI
// plugin does: "ALL" first (add: every capability the agent has; drop:
// none), then the single names are added, then dropped.
func withCapabilities(add, drop []string) oci.SpecOpts {
	var opts []oci.SpecOpts
	if slices.ContainsFunc(add, isAll) {
		opts = append(opts, oci.WithAllCurrentCapabilities)
	}
	if slices.ContainsFunc(drop, isAll) {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	opts = append(opts, oci.WithAddedCapabilities(capNames(add)), oci.WithDroppedCapabilities(capNames(drop)))
	return oci.Compose(opts...)
}

func isAll(name string) bool { return strings.EqualFold(name, "ALL") }

// capNames turns Kubernetes names (NET_RAW, net_raw, CAP_NET_RAW) into OCI
// names (CAP_NET_RAW), leaving out ALL.
func capNames(names []string) []string {
	var out []string
	for _, n := range names {
		if isAll(n) {
			continue
		}
		out = append(out, "CAP_"+strings.TrimPrefix(strings.ToUpper(n), "CAP_"))
	}
	return out
}

// withNoNewPrivileges sets no_new_privs to on. containerd's default spec
// sets it; Kubernetes sets it only for allowPrivilegeEscalation: false.
func withNoNewPrivileges(on bool) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.NoNewPrivileges = on
		return nil
	}
}

// withHostShm replaces the container's own /dev/shm with the node's, for
// pods in the node's IPC namespace.
var withHostShm = oci.Compose(oci.WithoutMounts("/dev/shm"), oci.WithMounts([]specs.Mount{
	{Destination: "/dev/shm", Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "rprivate", "rw"}},
}))

// withSeccomp sets the seccomp filter. It must follow the capabilities:
// the default profile allows some system calls only with some capabilities.
func withSeccomp(sc Seccomp) oci.SpecOpts {
	switch sc.Type {
	case "", SeccompRuntimeDefault:
		return seccomp.WithDefaultProfile()
	case SeccompUnconfined:
		return oci.WithSeccompUnconfined
	case SeccompLocalhost:
		return seccomp.WithProfile(sc.Profile)
	}
	return func(context.Context, oci.Client, *containers.Container, *oci.Spec) error {
		return fmt.Errorf("unknown seccomp profile type %q", sc.Type)
	}
}

// withSysctls sets kernel parameters in the container's namespaces. Which
// ones are allowed is the caller's policy; runc refuses those not
// namespaced by the container.
func withSysctls(sysctls map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(sysctls) == 0 {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for k, v := range sysctls {
			s.Linux.Sysctl[k] = v
		}
		return nil
	}
}

// sandboxSecurityOpts gives the pause container the pod's namespaces: its
// own, or the node's where the pod asks (a host-network sandbox has no
// network or UTS namespace and no hostname of its own); the pod's sysctls,
// set in those namespaces; and, for a privileged pod, a writable /sys. (The
// pause container mounts the pod network's sysfs first, and the kernel
// keeps a sysfs read-only for every later mount in that network.)
func sandboxSecurityOpts(spec SandboxSpec) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if spec.Host.Network {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace))
	} else {
		opts = append(opts, oci.WithHostname(spec.Hostname),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: spec.NetNS}))
	}
	if spec.Host.PID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	if spec.Host.IPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	}
	if spec.Privileged {
		opts = append(opts, oci.WithWriteableSysfs)
	}
	return append(opts, withSysctls(spec.Sysctls))
}

// checkSecurity checks a container's runAsNonRoot against its image (only
// then is the image's config read) and returns its Security with a relative
// Localhost seccomp profile made absolute. The caller's Security is not
// changed. Errors from the runAsNonRoot rule match ErrRunAsNonRoot.
func (r *Runtime) checkSecurity(ctx context.Context, img containerd.Image, spec ContainerSpec) (*Security, error) {
	sec := spec.Security
	if sec == nil {
		return nil, nil
	}
	imageUser := ""
	if sec.RunAsNonRoot && sec.RunAsUser == nil {
		config, err := img.Spec(ctx)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", spec.Image, err)
		}
		imageUser = config.Config.User
	}
	if err := verifyRunAsNonRoot(spec.Pod, spec.Name, sec, imageUser); err != nil {
		return nil, err
	}
	profile, err := profilePath(filepath.Join(r.cfg.StateDir, "seccomp"), sec.Seccomp)
	if err != nil {
		return nil, err
	}
	resolved := *sec
	resolved.Seccomp.Profile = profile
	return &resolved, nil
}

// profilePath is where a Localhost profile's file is: Profile itself if
// absolute, else Profile under root, which it may not leave.
func profilePath(root string, sc Seccomp) (string, error) {
	if sc.Type != SeccompLocalhost || filepath.IsAbs(sc.Profile) {
		return sc.Profile, nil
	}
	if !filepath.IsLocal(sc.Profile) {
		return "", fmt.Errorf("seccomp profile %q: not a path under %s", sc.Profile, root)
	}
	return filepath.Join(root, sc.Profile), nil
}

// verifyRunAsNonRoot is the kubelet's runAsNonRoot rule: runAsUser, when
// set, must not be 0; else the image's USER ("uid[:gid]" or
// "name[:group]"; empty is root) must be a numeric uid other than 0, since
// a name cannot be checked before the container runs. Nil when the container
// does not ask for runAsNonRoot.
func verifyRunAsNonRoot(pod PodRef, container string, sec *Security, imageUser string) error {
	if sec == nil || !sec.RunAsNonRoot {
		return nil
	}
	where := fmt.Sprintf("(pod: %q, container: %s)", pod.Name+"_"+pod.Namespace+"("+pod.UID+")", container)
	if sec.RunAsUser != nil {
		if *sec.RunAsUser == 0 {
			return nonRootError("container's runAsUser breaks non-root policy " + where)
		}
		return nil
	}
	user, _, _ := strings.Cut(imageUser, ":")
	if user == "" {
		user = "0"
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	switch {
	case err != nil:
		return nonRootError(fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", user, where))
	case uid == 0:
		return nonRootError("container has runAsNonRoot and image will run as root " + where)
	}
	return nil
}

// nonRootError is an ErrRunAsNonRoot with the kubelet's words for the case.
type nonRootError string

func (e nonRootError) Error() string        { return string(e) }
func (e nonRootError) Is(target error) bool { return target == ErrRunAsNonRoot }
