package host

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// Check is one thing `skiff check-config` verifies.
type Check struct {
	Name string
	// Run reports what it found and, when the machine fails the check,
	// an error saying how to fix it.
	Run func(Env) (found string, fix error)
}

// Result is a check's outcome.
type Result struct {
	Name, Found string
	Fix         error // nil: passed
}

// Ports a node listens on, by role.
var (
	ServerPorts = []Port{{6443, "API server (--secure-port)"}, {2380, "embedded etcd peers (--etcd-peer-port)"}}
	AgentPorts  = []Port{{10250, "node API (--port)"}, {10256, "service proxy health (--proxy-healthz-bind-address)"}}
)

// Port is a TCP port skiff listens on.
type Port struct {
	Number int
	Use    string
}

// MinKernel is the oldest kernel skiff is known to run on (cgroup, overlayfs
// and netfilter features Kubernetes nodes rely on).
var MinKernel = [2]int{4, 19}

// CNIPlugins are the plugins of the pod network's configuration.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// Checks are the checks for a node, with the ports of ports free.
func Checks(pluginDirs []string, ports []Port) []Check {
	checks := []Check{
		{"kernel version", checkKernel},
		{"cgroups", checkCgroups},
		{"overlayfs", moduleCheck(Modules[0])},
	}
	for _, m := range append(Modules[1:len(Modules):len(Modules)], VXLAN) {
		checks = append(checks, Check{"kernel module " + m.Name, moduleCheck(m)})
	}
	checks = append(checks, Check{"iptables", checkIptables})
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "nsenter"} {
		checks = append(checks, Check{bin, lookPath(bin)})
	}
	checks = append(checks, Check{"CNI plugins", cniCheck(pluginDirs)})
	for _, p := range ports {
		checks = append(checks, Check{fmt.Sprintf("port %d", p.Number), portCheck(p)})
	}
	return checks
}

// RunChecks runs every check on e.
func RunChecks(e Env, checks []Check) []Result {
	out := make([]Result, len(checks))
	for i, c := range checks {
		found, fix := c.Run(e)
		out[i] = Result{c.Name, found, fix}
	}
	return out
}

func checkKernel(e Env) (string, error) {
	data, err := e.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "", fmt.Errorf("cannot read the kernel release: %w", err)
	}
	release := strings.TrimSpace(string(data))
	var v [2]int
	parts := strings.FieldsFunc(release, func(r rune) bool { return r < '0' || r > '9' })
	for i := 0; i < 2 && i < len(parts); i++ {
		v[i], _ = strconv.Atoi(parts[i])
	}
	if v[0] < MinKernel[0] || v[0] == MinKernel[0] && v[1] < MinKernel[1] {
		return release, fmt.Errorf("kernel %s is older than %d.%d; upgrade the kernel", release, MinKernel[0], MinKernel[1])
	}
	return release, nil
}

// checkCgroups wants cgroup v2 with the cpu, memory and pids controllers,
// or cgroup v1 with those hierarchies mounted.
func checkCgroups(e Env) (string, error) {
	want := []string{"cpu", "memory", "pids"}
	if data, err := e.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		have := strings.Fields(string(data))
		if missing := absent(want, have); len(missing) > 0 {
			return "v2", fmt.Errorf("cgroup v2 without the %s controller(s); enable them (systemd: they are on by default; a container host must delegate them)", strings.Join(missing, ", "))
		}
		return "v2 (" + strings.Join(want, ", ") + ")", nil
	}
	data, err := e.ReadFile("/proc/cgroups")
	if err != nil {
		return "", fmt.Errorf("no cgroup v2 at /sys/fs/cgroup and no /proc/cgroups: %w; mount cgroups", err)
	}
	var have []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[3] == "1" {
			if _, err := e.Stat(filepath.Join("/sys/fs/cgroup", f[0])); err == nil {
				have = append(have, f[0])
			}
		}
	}
	if missing := absent(want, have); len(missing) > 0 {
		return "v1", fmt.Errorf("cgroup v1 without the %s hierarchy; enable and mount it (kernel: cgroup_enable=memory)", strings.Join(missing, ", "))
	}
	return "v1 (" + strings.Join(want, ", ") + ")", nil
}

func absent(want, have []string) []string {
	var out []string
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// moduleCheck passes when m is present or modprobe can load it; the
// check does load it, as the agent would at start.
func moduleCheck(m Module) func(Env) (string, error) {
	return func(e Env) (string, error) {
		if m.present(e) {
			return "present", nil
		}
		if err := Load(e, m); err != nil {
			return "missing", err
		}
		return "loaded now", nil
	}
}

func checkIptables(e Env) (string, error) {
	path, err := e.LookPath("iptables")
	if err != nil {
		return "", fmt.Errorf("iptables not found on PATH; install it (Debian: apt-get install iptables)")
	}
	out, err := e.Run(path, "--version")
	if err != nil {
		return path, fmt.Errorf("%s --version failed: %s", path, bytes.TrimSpace(out))
	}
	if out, err := e.Run(path, "-w", "5", "-t", "nat", "-S", "POSTROUTING"); err != nil {
		return strings.TrimSpace(string(out)), fmt.Errorf("iptables cannot read the nat table (%s); load the kernel's netfilter modules (nf_tables or ip_tables)", bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

func lookPath(bin string) func(Env) (string, error) {
	return func(e Env) (string, error) {
		path, err := e.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("%s not found on PATH; install it (Debian: apt-get install containerd runc util-linux, or test/vm/provision.sh)", bin)
		}
		return path, nil
	}
}

func cniCheck(dirs []string) func(Env) (string, error) {
	return func(e Env) (string, error) {
		for _, dir := range dirs {
			var missing []string
			for _, p := range CNIPlugins {
				if _, err := e.Stat(filepath.Join(dir, p)); err != nil {
					missing = append(missing, p)
				}
			}
			if len(missing) == 0 {
				return dir, nil
			}
		}
		return "", fmt.Errorf("the CNI plugins %s are not all in any of %s; install them (Debian: apt-get install containernetworking-plugins)", strings.Join(CNIPlugins, ", "), strings.Join(dirs, ", "))
	}
}

func portCheck(p Port) func(Env) (string, error) {
	return func(e Env) (string, error) {
		if err := e.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p.Number))); err != nil {
			return "in use", fmt.Errorf("port %d (%s) is taken: %w; stop what listens there (a running skiff too) or choose another port", p.Number, p.Use, err)
		}
		return "free", nil
	}
}
