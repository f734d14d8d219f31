package host

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// fakeEnv is a machine of files; modprobe of a name in loadable creates
// the files that module brings.
type fakeEnv struct {
	files    map[string]string
	paths    map[string]string // binaries on PATH
	loadable map[string][]string
	taken    map[string]bool // listen addresses in use
	ran      []string
}

func (f *fakeEnv) ReadFile(p string) ([]byte, error) {
	if s, ok := f.files[p]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

func (f *fakeEnv) WriteFile(p string, data []byte) error {
	if _, ok := f.files[p]; !ok {
		return fs.ErrNotExist
	}
	f.files[p] = string(data)
	return nil
}

func (f *fakeEnv) Stat(p string) (os.FileInfo, error) {
	if _, err := f.ReadFile(p); err != nil {
		return nil, err
	}
	return nil, nil
}

func (f *fakeEnv) LookPath(name string) (string, error) {
	if p, ok := f.paths[name]; ok {
		return p, nil
	}
	return "", errors.New("not found")
}

func (f *fakeEnv) Run(name string, args ...string) ([]byte, error) {
	f.ran = append(f.ran, name+" "+strings.Join(args, " "))
	if name == "modprobe" {
		files, ok := f.loadable[args[len(args)-1]]
		if !ok {
			return []byte("modprobe: FATAL: Module " + args[len(args)-1] + " not found in directory /lib/modules/6.1.0"), errors.New("exit status 1")
		}
		for _, p := range files {
			f.files[p] = ""
		}
	}
	return []byte("iptables v1.8.9 (nf_tables)"), nil
}

func (f *fakeEnv) Listen(_, addr string) error {
	if f.taken[addr] {
		return errors.New("address already in use")
	}
	return nil
}

// goodNode is a Debian 12 node with cgroup v2 and every module built in
// or loaded but br_netfilter, which modprobe can load.
func goodNode() *fakeEnv {
	return &fakeEnv{
		files: map[string]string{
			"/proc/sys/kernel/osrelease":               "6.1.0-28-amd64\n",
			"/sys/fs/cgroup/cgroup.controllers":        "cpuset cpu io memory hugetlb pids rdma\n",
			"/proc/filesystems":                        "nodev\tsysfs\nnodev\toverlay\n",
			"/proc/sys/net/netfilter/nf_conntrack_max": "",
			"/sys/module/vxlan":                        "",
			"/proc/sys/net/ipv4/ip_forward":            "0",
			"/usr/lib/cni/bridge":                      "", "/usr/lib/cni/host-local": "", "/usr/lib/cni/loopback": "", "/usr/lib/cni/portmap": "",
		},
		paths: map[string]string{"iptables": "/usr/sbin/iptables", "containerd": "/usr/bin/containerd",
			"containerd-shim-runc-v2": "/usr/bin/containerd-shim-runc-v2", "runc": "/usr/sbin/runc", "nsenter": "/usr/bin/nsenter"},
		loadable: map[string][]string{"br_netfilter": {"/proc/sys/net/bridge/bridge-nf-call-iptables", "/proc/sys/net/bridge/bridge-nf-call-ip6tables"}},
		taken:    map[string]bool{},
	}
}

func results(e Env, ports []Port) map[string]Result {
	out := map[string]Result{}
	for _, r := range RunChecks(e, Checks([]string{"/usr/lib/cni", "/opt/cni/bin"}, ports)) {
		out[r.Name] = r
	}
	return out
}

func TestChecksPassOnAGoodNode(t *testing.T) {
	e := goodNode()
	for name, r := range results(e, append(ServerPorts, AgentPorts...)) {
		if r.Fix != nil {
			t.Errorf("%s: %v", name, r.Fix)
		}
	}
	if r := results(e, nil)["kernel module br_netfilter"]; r.Found != "present" {
		t.Errorf("br_netfilter after the first run: %q, want present (loaded by the check)", r.Found)
	}
}

func TestChecksNameTheFix(t *testing.T) {
	for _, tc := range []struct {
		name, check, fix string
		breakIt          func(*fakeEnv)
	}{
		{"old kernel", "kernel version", "older than 4.19", func(e *fakeEnv) { e.files["/proc/sys/kernel/osrelease"] = "4.14.2\n" }},
		{"no memory controller", "cgroups", "without the memory controller", func(e *fakeEnv) {
			e.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu pids\n"
		}},
		{"cgroup v1 without memory", "cgroups", "v1 without the memory hierarchy", func(e *fakeEnv) {
			delete(e.files, "/sys/fs/cgroup/cgroup.controllers")
			e.files["/proc/cgroups"] = "#subsys_name hierarchy num_cgroups enabled\ncpu 2 1 1\nmemory 0 1 0\npids 3 1 1\n"
			e.files["/sys/fs/cgroup/cpu"], e.files["/sys/fs/cgroup/pids"] = "", ""
		}},
		{"no overlayfs", "overlayfs", "modprobe failed: modprobe: FATAL: Module overlay not found", func(e *fakeEnv) {
			e.files["/proc/filesystems"] = "nodev\tsysfs\n"
		}},
		{"no br_netfilter", "kernel module br_netfilter", "linux-image", func(e *fakeEnv) { delete(e.loadable, "br_netfilter") }},
		{"no iptables", "iptables", "apt-get install iptables", func(e *fakeEnv) { delete(e.paths, "iptables") }},
		{"no runc", "runc", "runc not found on PATH", func(e *fakeEnv) { delete(e.paths, "runc") }},
		{"no portmap", "CNI plugins", "containernetworking-plugins", func(e *fakeEnv) { delete(e.files, "/usr/lib/cni/portmap") }},
		{"port taken", "port 6443", "port 6443 (API server (--secure-port)) is taken", func(e *fakeEnv) { e.taken[":6443"] = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := goodNode()
			tc.breakIt(e)
			r := results(e, ServerPorts)[tc.check]
			if r.Fix == nil || !strings.Contains(r.Fix.Error(), tc.fix) {
				t.Fatalf("%s: fix %v, want one containing %q", tc.check, r.Fix, tc.fix)
			}
		})
	}
}

func TestPrepareLoadsModulesAndSetsSysctls(t *testing.T) {
	e := goodNode()
	if err := Prepare(e, true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.ran, "; "); got != "modprobe -- br_netfilter" {
		t.Errorf("ran %q, want only the modprobe of the missing module", got)
	}
	for _, s := range Sysctls {
		if e.files[s.Path()] != s.Value {
			t.Errorf("%s = %q, want %q", s.Name, e.files[s.Path()], s.Value)
		}
	}
}

func TestPrepareSaysWhatIsMissing(t *testing.T) {
	e := goodNode()
	delete(e.loadable, "br_netfilter")
	delete(e.files, "/sys/module/vxlan")
	err := Prepare(e, false)
	if err == nil || !strings.Contains(err.Error(), "kernel module br_netfilter") || !strings.Contains(err.Error(), "sysctl net.bridge.bridge-nf-call-iptables=1") {
		t.Fatalf("Prepare: %v, want the module and the sysctl named", err)
	}
	if strings.Contains(err.Error(), "vxlan") {
		t.Errorf("vxlan is needed only with vxlan: %v", err)
	}
}
