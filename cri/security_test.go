package cri

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cap"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// defaultSpec is containerd's default spec with its root at rootfs, as
// containerOpts starts from; the options under test are applied to it.
func defaultSpec(t *testing.T, rootfs string, opts ...oci.SpecOpts) (*oci.Spec, error) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "test")
	c := &containers.Container{ID: "c"}
	s, err := oci.GenerateSpec(ctx, nil, c, oci.WithRootFSPath(rootfs))
	if err != nil {
		t.Fatal(err)
	}
	return s, oci.ApplyOpts(ctx, nil, c, s, opts...)
}

func mustSpec(t *testing.T, opts ...oci.SpecOpts) *oci.Spec {
	t.Helper()
	s, err := defaultSpec(t, t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSecurityDefaults(t *testing.T) {
	s := mustSpec(t, securityOpts(nil)...)
	if s.Process.NoNewPrivileges {
		t.Error("no_new_privs set by default; Kubernetes allows privilege escalation unless asked")
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno {
		t.Errorf("seccomp %+v, want containerd's default profile", s.Linux.Seccomp)
	}
	if !slices.Contains(s.Process.Capabilities.Effective, "CAP_NET_RAW") || slices.Contains(s.Process.Capabilities.Effective, "CAP_SYS_ADMIN") {
		t.Errorf("capabilities %v, want containerd's default set", s.Process.Capabilities.Effective)
	}
	if s.Root.Readonly || s.Process.User.UID != 0 {
		t.Errorf("root readonly %v, uid %d", s.Root.Readonly, s.Process.User.UID)
	}
	if zero := mustSpec(t, securityOpts(&Security{})...); zero.Linux.Seccomp == nil || zero.Process.NoNewPrivileges {
		t.Error("a zero Security differs from nil")
	}
}

func TestCapabilities(t *testing.T) {
	tests := []struct {
		name       string
		add, drop  []string
		want, gone []string
	}{
		{"drop one", nil, []string{"NET_RAW"}, []string{"CAP_CHOWN"}, []string{"CAP_NET_RAW"}},
		{"add any spelling", []string{"net_admin", "CAP_SYS_TIME"}, nil, []string{"CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_NET_RAW"}, nil},
		{"drop all", nil, []string{"ALL"}, nil, []string{"CAP_CHOWN", "CAP_NET_RAW"}},
		{"drop all, add one", []string{"NET_BIND_SERVICE"}, []string{"all"}, []string{"CAP_NET_BIND_SERVICE"}, []string{"CAP_CHOWN"}},
		{"add and drop the same", []string{"NET_ADMIN"}, []string{"NET_ADMIN"}, nil, []string{"CAP_NET_ADMIN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := mustSpec(t, withCapabilities(tt.add, tt.drop)).Process.Capabilities
			for _, set := range [][]string{caps.Bounding, caps.Effective, caps.Permitted} {
				for _, c := range tt.want {
					if !slices.Contains(set, c) {
						t.Errorf("%s missing from %v", c, set)
					}
				}
				for _, c := range tt.gone {
					if slices.Contains(set, c) {
						t.Errorf("%s still in %v", c, set)
					}
				}
			}
			if strings.HasPrefix(tt.name, "drop all") && len(caps.Effective) != len(tt.want) {
				t.Errorf("effective %v, want only %v", caps.Effective, tt.want)
			}
		})
	}
}

func TestPrivileged(t *testing.T) {
	s := mustSpec(t, securityOpts(&Security{Privileged: true, DropCaps: []string{"ALL"}, NoNewPrivileges: true, Seccomp: Seccomp{Type: SeccompRuntimeDefault}})...)
	current, err := cap.Current()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Process.Capabilities.Effective, current) {
		t.Errorf("capabilities %v, want the caller's %v", s.Process.Capabilities.Effective, current)
	}
	if s.Linux.Seccomp != nil || s.Process.NoNewPrivileges || len(s.Linux.MaskedPaths) > 0 || len(s.Linux.ReadonlyPaths) > 0 {
		t.Errorf("seccomp %v, no_new_privs %v, masked %v, read-only %v", s.Linux.Seccomp != nil, s.Process.NoNewPrivileges, s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	if d := s.Linux.Resources.Devices; len(d) != 1 || !d[0].Allow || d[0].Access != "rwm" || d[0].Type != "" {
		t.Errorf("device rules %+v, want all allowed", d)
	}
	for _, m := range s.Mounts {
		if m.Type == "sysfs" && slices.Contains(m.Options, "ro") {
			t.Errorf("/sys is read-only: %v", m.Options)
		}
	}
}

// testRootfs is an image root with a passwd and a group file.
func testRootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
		"etc/group":  "root:x:0:\napp:x:1000:\nextra:x:5000:app\n",
	}
	for name, data := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestUserAndGroups(t *testing.T) {
	id := func(v int64) *int64 { return &v }
	tests := []struct {
		name          string
		imageUID      uint32 // what the image config set
		sec           Security
		uid, gid      uint32
		groups        []uint32
		wantErrSubstr string
	}{
		{"image user kept", 7, Security{}, 7, 0, []uint32{0}, ""},
		{"uid takes its group from passwd", 0, Security{RunAsUser: id(1000)}, 1000, 1000, []uint32{1000, 5000}, ""},
		{"uid unknown to passwd gets group 0", 0, Security{RunAsUser: id(2000)}, 2000, 0, []uint32{0}, ""},
		{"uid and gid", 0, Security{RunAsUser: id(1000), RunAsGroup: id(3000)}, 1000, 3000, []uint32{3000, 5000}, ""},
		{"gid alone keeps the image user", 1000, Security{RunAsGroup: id(3000)}, 1000, 3000, []uint32{3000, 5000}, ""},
		{"supplementary groups merged", 0, Security{RunAsUser: id(1000), RunAsGroup: id(3000), SupplementalGroups: []int64{2000, 5000, 2000}},
			1000, 3000, []uint32{2000, 3000, 5000}, ""},
		{"uid out of range", 0, Security{RunAsUser: id(1 << 40)}, 0, 0, nil, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := oci.WithUIDGID(tt.imageUID, 0)
			opts := append([]oci.SpecOpts{image}, securityOpts(&tt.sec)...)
			s, err := defaultSpec(t, testRootfs(t), opts...)
			if tt.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Fatalf("err %v, want %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := s.Process.User
			if u.UID != tt.uid || u.GID != tt.gid || !slices.Equal(u.AdditionalGids, tt.groups) {
				t.Errorf("uid %d gid %d groups %v, want %d %d %v", u.UID, u.GID, u.AdditionalGids, tt.uid, tt.gid, tt.groups)
			}
		})
	}
}

func TestProcessFlags(t *testing.T) {
	s := mustSpec(t, securityOpts(&Security{NoNewPrivileges: true, ReadOnlyRootfs: true, HostPID: true, HostIPC: true})...)
	if !s.Process.NoNewPrivileges || !s.Root.Readonly {
		t.Errorf("no_new_privs %v, read-only root %v", s.Process.NoNewPrivileges, s.Root.Readonly)
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.PIDNamespace {
			t.Error("hostPID container has its own PID namespace")
		}
	}
	shm := 0
	for _, m := range s.Mounts {
		if m.Destination == "/dev/shm" {
			shm++
			if m.Source != "/dev/shm" || m.Type != "bind" {
				t.Errorf("/dev/shm is %+v, want the node's", m)
			}
		}
	}
	if shm != 1 {
		t.Errorf("%d /dev/shm mounts", shm)
	}
}

func TestSeccomp(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "log.json")
	if err := os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_LOG"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sc      Seccomp
		want    specs.LinuxSeccompAction // "" for none
		wantErr bool
	}{
		{"unset is RuntimeDefault", Seccomp{}, specs.ActErrno, false},
		{"RuntimeDefault", Seccomp{Type: SeccompRuntimeDefault}, specs.ActErrno, false},
		{"Unconfined", Seccomp{Type: SeccompUnconfined}, "", false},
		{"Localhost", Seccomp{Type: SeccompLocalhost, Profile: profile}, specs.ActLog, false},
		{"Localhost missing file", Seccomp{Type: SeccompLocalhost, Profile: filepath.Join(dir, "none.json")}, "", true},
		{"unknown type", Seccomp{Type: "Strict"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := defaultSpec(t, t.TempDir(), withSeccomp(tt.sc))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			got := specs.LinuxSeccompAction("")
			if s.Linux.Seccomp != nil {
				got = s.Linux.Seccomp.DefaultAction
			}
			if got != tt.want {
				t.Errorf("default action %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProfilePath(t *testing.T) {
	tests := []struct {
		sc      Seccomp
		want    string
		wantErr bool
	}{
		{Seccomp{Type: SeccompLocalhost, Profile: "audit.json"}, "/root/seccomp/audit.json", false},
		{Seccomp{Type: SeccompLocalhost, Profile: "team/audit.json"}, "/root/seccomp/team/audit.json", false},
		{Seccomp{Type: SeccompLocalhost, Profile: "/etc/profile.json"}, "/etc/profile.json", false},
		{Seccomp{Type: SeccompLocalhost, Profile: "../escape.json"}, "", true},
		{Seccomp{Type: SeccompRuntimeDefault}, "", false},
	}
	for _, tt := range tests {
		got, err := profilePath("/root/seccomp", tt.sc)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("profilePath(%+v) = %q, %v; want %q, error %v", tt.sc, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	id := func(v int64) *int64 { return &v }
	pod := PodRef{UID: "u1", Namespace: "ns", Name: "web"}
	tests := []struct {
		name      string
		sec       *Security
		imageUser string
		want      string // error text; "" for allowed
	}{
		{"not asked", &Security{}, "", ""},
		{"nil", nil, "", ""},
		{"image root by default", &Security{RunAsNonRoot: true}, "", `container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", container: c)`},
		{"image uid 0 with group", &Security{RunAsNonRoot: true}, "0:1000", `container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", container: c)`},
		{"image named user", &Security{RunAsNonRoot: true}, "nobody", `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "web_ns(u1)", container: c)`},
		{"image uid", &Security{RunAsNonRoot: true}, "1000:1000", ""},
		{"runAsUser 0", &Security{RunAsNonRoot: true, RunAsUser: id(0)}, "1000", `container's runAsUser breaks non-root policy (pod: "web_ns(u1)", container: c)`},
		{"runAsUser wins over a root image", &Security{RunAsNonRoot: true, RunAsUser: id(1000)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyRunAsNonRoot(pod, "c", tt.sec, tt.imageUser)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrRunAsNonRoot) {
				t.Errorf("err %v, want %q matching ErrRunAsNonRoot", err, tt.want)
			}
		})
	}
}

func TestSandboxNamespaces(t *testing.T) {
	has := func(s *oci.Spec, typ specs.LinuxNamespaceType) (string, bool) {
		for _, ns := range s.Linux.Namespaces {
			if ns.Type == typ {
				return ns.Path, true
			}
		}
		return "", false
	}
	own := mustSpec(t, sandboxSecurityOpts(SandboxSpec{Hostname: "web", NetNS: "/run/netns/x", Sysctls: map[string]string{"net.ipv4.tcp_syncookies": "0"}})...)
	if path, _ := has(own, specs.NetworkNamespace); path != "/run/netns/x" || own.Hostname != "web" {
		t.Errorf("netns %q, hostname %q", path, own.Hostname)
	}
	if own.Linux.Sysctl["net.ipv4.tcp_syncookies"] != "0" {
		t.Errorf("sysctls %v", own.Linux.Sysctl)
	}
	for _, m := range own.Mounts {
		if m.Type == "sysfs" && !slices.Contains(m.Options, "ro") {
			t.Errorf("unprivileged sandbox /sys options %v", m.Options)
		}
	}
	host := mustSpec(t, sandboxSecurityOpts(SandboxSpec{Hostname: "web", Host: HostNamespaces{Network: true, PID: true, IPC: true}, Privileged: true})...)
	for _, m := range host.Mounts {
		if m.Type == "sysfs" && slices.Contains(m.Options, "ro") {
			t.Errorf("privileged sandbox /sys options %v", m.Options)
		}
	}
	for _, typ := range []specs.LinuxNamespaceType{specs.NetworkNamespace, specs.UTSNamespace, specs.PIDNamespace, specs.IPCNamespace} {
		if _, ok := has(host, typ); ok {
			t.Errorf("host-namespace sandbox has its own %s namespace", typ)
		}
	}
	if _, ok := has(host, specs.MountNamespace); !ok || host.Hostname != "" {
		t.Errorf("mount namespace %v, hostname %q", ok, host.Hostname)
	}
}

func TestContainerJoinsHostNetworkSandbox(t *testing.T) {
	s := mustSpec(t, namespaceOpts("", 42)...)
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace && ns.Path != "/proc/42/ns/net" {
			t.Errorf("network namespace %q, want the sandbox's", ns.Path)
		}
	}
}
