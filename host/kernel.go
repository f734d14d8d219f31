// Package host is what a skiff node needs of its machine: the kernel
// modules and sysctls it loads and sets at start, and the checks `skiff
// check-config` runs before anything is installed.
package host

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// Module is a kernel feature a node needs, provided by a module or built
// into the kernel: present probes for the feature itself, so a built-in
// one needs no modprobe.
type Module struct {
	Name    string
	Why     string
	present func(Env) bool
}

// Modules are the kernel modules every node needs.
var Modules = []Module{
	{"overlay", "containerd's overlayfs snapshotter (container root filesystems)", func(e Env) bool {
		data, err := e.ReadFile("/proc/filesystems")
		return err == nil && bytes.Contains(data, []byte("\toverlay\n"))
	}},
	{"br_netfilter", "iptables for bridged pod traffic (a pod reaching a service backed on its own node)", exists("/proc/sys/net/bridge/bridge-nf-call-iptables")},
	{"nf_conntrack", "connection tracking for service NAT", exists("/proc/sys/net/netfilter/nf_conntrack_max")},
}

// VXLAN is needed only with --pod-network vxlan.
var VXLAN = Module{"vxlan", "--pod-network vxlan (pod traffic between nodes encapsulated in UDP 8472)", func(e Env) bool {
	_, err := e.Stat("/sys/module/vxlan")
	return err == nil
}}

func exists(path string) func(Env) bool {
	return func(e Env) bool {
		_, err := e.Stat(path)
		return err == nil
	}
}

// Sysctls are the settings every node needs: forwarding between pods and
// nodes, and bridged pod traffic seen by iptables.
var Sysctls = []Sysctl{
	{"net.ipv4.ip_forward", "1"},
	{"net.bridge.bridge-nf-call-iptables", "1"},
	{"net.bridge.bridge-nf-call-ip6tables", "1"},
}

// Sysctl is one kernel setting by its dotted name.
type Sysctl struct{ Name, Value string }

// Path is the file under /proc/sys that holds it.
func (s Sysctl) Path() string { return "/proc/sys/" + strings.ReplaceAll(s.Name, ".", "/") }

// Env is the machine as host sees it; System is the real one.
type Env interface {
	ReadFile(path string) ([]byte, error)
	WriteFile(path string, data []byte) error
	Stat(path string) (os.FileInfo, error)
	LookPath(name string) (string, error)
	Run(name string, args ...string) ([]byte, error)
	Listen(network, addr string) error
}

// System is this machine.
var System Env = system{}

type system struct{}

func (system) ReadFile(path string) ([]byte, error)     { return os.ReadFile(path) }
func (system) WriteFile(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }
func (system) Stat(path string) (os.FileInfo, error)    { return os.Stat(path) }
func (system) LookPath(name string) (string, error)     { return exec.LookPath(name) }
func (system) Run(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

func (system) Listen(network, addr string) error {
	l, err := net.Listen(network, addr)
	if err == nil {
		l.Close()
	}
	return err
}

// Prepare loads the modules and sets the sysctls a node needs (the VXLAN
// module too when vxlan is true). The error names each one that could not
// be had and what to do about it.
func Prepare(e Env, vxlan bool) error {
	mods := Modules
	if vxlan {
		mods = append(mods[:len(mods):len(mods)], VXLAN)
	}
	var errs []error
	for _, m := range mods {
		errs = append(errs, Load(e, m))
	}
	for _, s := range Sysctls {
		if err := e.WriteFile(s.Path(), []byte(s.Value)); err != nil {
			errs = append(errs, fmt.Errorf("sysctl %s=%s: %w", s.Name, s.Value, err))
		}
	}
	return errors.Join(errs...)
}

// Load makes m present, with modprobe unless it already is.
func Load(e Env, m Module) error {
	if m.present(e) {
		return nil
	}
	out, err := e.Run("modprobe", "--", m.Name)
	if m.present(e) {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if err != nil && msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("kernel module %s (%s) is not loaded and modprobe failed: %s; install the modules of this kernel (Debian: linux-image-$(uname -r)) or build it in", m.Name, m.Why, msg)
}
