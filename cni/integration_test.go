package cni

// Root integration tests: real netns, real plugins from /usr/lib/cni, real
// iptables. Each test uses its own bridge, state dirs and 10.250.X.0/24, and its
// cleanup deletes them all. Traffic goes only to the namespaces a test created
// and to 127.0.0.1.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

type env struct {
	t      *testing.T
	n      *Network
	cfg    Config
	cidr   *net.IPNet
	prefix string   // "10.250.X."
	ids    []string // every sandbox id the test used
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("integration test: needs root and no -short")
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("no CNI plugins in /usr/lib/cni")
	}
	x := 1 + rand.IntN(254)
	n, cfg := newTestNetwork(t, fmt.Sprintf("skt%06x", rand.IntN(1<<24)))
	e := &env{t: t, n: n, cfg: cfg, prefix: fmt.Sprintf("10.250.%d.", x)}
	_, e.cidr, _ = net.ParseCIDR(e.prefix + "0/24")
	hostportChains := strings.Contains(e.iptablesSave(), "CNI-HOSTPORT-DNAT")
	t.Cleanup(func() { e.cleanup(hostportChains) })
	return e
}

func (e *env) pod(ports ...PortMapping) Pod {
	id := fmt.Sprintf("t%016x", rand.Uint64())
	e.ids = append(e.ids, id)
	return Pod{ID: id, Namespace: "test", Name: "pod-" + id[:6], UID: "uid-" + id, Ports: ports}
}

func (e *env) setup(pod Pod) Result {
	e.t.Helper()
	res, err := e.n.Setup(context.Background(), pod)
	if err != nil {
		e.t.Fatalf("Setup(%s): %v", pod.ID, err)
	}
	if res.NetNSPath != e.n.NetNSPath(pod.ID) || len(res.IPs) != 1 || !e.cidr.Contains(res.IPs[0]) {
		e.t.Fatalf("Setup(%s) = %+v, want one IP in %s at %s", pod.ID, res, e.cidr, e.n.NetNSPath(pod.ID))
	}
	return res
}

func (e *env) teardown(id string) {
	e.t.Helper()
	if err := e.n.Teardown(context.Background(), id); err != nil {
		e.t.Fatalf("Teardown(%s): %v", id, err)
	}
}

// cleanup removes what the test may have left, then fails the test if any rule
// mentioning it is still in iptables.
func (e *env) cleanup(hostportChainsBefore bool) {
	ids, _ := e.n.List()
	for _, id := range ids {
		if err := e.n.Teardown(context.Background(), id); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
		if err := removeNetNS(e.n.NetNSPath(id)); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	if br, err := netlink.LinkByName(e.cfg.Bridge); err == nil {
		if err := netlink.LinkDel(br); err != nil {
			e.t.Errorf("cleanup: delete bridge: %v", err)
		}
	}
	if !hostportChainsBefore {
		e.removeHostportChains()
	}
	rules := e.iptablesSave()
	for _, s := range append([]string{e.prefix, e.cfg.Bridge}, e.ids...) {
		if strings.Contains(rules, s) {
			e.t.Errorf("cleanup: iptables still mentions %s:\n%s", s, rules)
		}
	}
}

// removeHostportChains deletes the chains portmap shares between all pods, when
// this test created them and no pod uses them any more.
func (e *env) removeHostportChains() {
	dnat, err := exec.Command("iptables", "-t", "nat", "-S", "CNI-HOSTPORT-DNAT").Output()
	if err != nil || strings.Contains(string(dnat), "-A CNI-HOSTPORT-DNAT") {
		return // absent, or in use
	}
	for _, chain := range []string{"PREROUTING", "OUTPUT", "POSTROUTING"} {
		out, err := exec.Command("iptables", "-t", "nat", "-S", chain).Output()
		if err != nil {
			e.t.Errorf("cleanup: %v", err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n") // lines[0] is the policy
		for i := len(lines) - 1; i > 0; i-- {
			if strings.Contains(lines[i], "-j CNI-HOSTPORT-") {
				e.iptables("-t", "nat", "-D", chain, fmt.Sprint(i))
			}
		}
	}
	for _, chain := range []string{"CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ"} {
		e.iptables("-t", "nat", "-F", chain)
		e.iptables("-t", "nat", "-X", chain)
	}
}

func (e *env) iptables(args ...string) {
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		e.t.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (e *env) iptablesSave() string {
	e.t.Helper()
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		e.t.Fatalf("iptables-save: %v", err)
	}
	return string(out)
}

// checkPod asserts the pod's namespace: eth0 with ip, lo up, IPv6 DAD off, and
// host-local's allocation for ip.
func (e *env) checkPod(res Result) {
	e.t.Helper()
	err := inNetNS(res.NetNSPath, func() error {
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(eth0, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if len(addrs) != 1 || !addrs[0].IP.Equal(res.IPs[0]) {
			return fmt.Errorf("eth0 addresses %v, want %s", addrs, res.IPs[0])
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil || lo.Attrs().Flags&net.FlagUp == 0 {
			return fmt.Errorf("lo not up: %v", err)
		}
		for _, path := range dadSysctls {
			if v, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(v)) != "0" {
				return fmt.Errorf("%s = %s", path, v)
			}
		}
		return nil
	})
	if err != nil {
		e.t.Errorf("pod netns %s: %v", res.NetNSPath, err)
	}
	if _, err := os.Stat(e.allocation(res.IPs[0])); err != nil {
		e.t.Errorf("no host-local allocation: %v", err)
	}
}

func (e *env) allocation(ip net.IP) string {
	return filepath.Join(e.cfg.IPAMDir, networkName, ip.String())
}

// checkGone asserts nothing of the pod is left: netns, allocation, iptables rules.
func (e *env) checkGone(id string, ip net.IP) {
	e.t.Helper()
	if _, err := os.Lstat(e.n.NetNSPath(id)); !errors.Is(err, fs.ErrNotExist) {
		e.t.Errorf("netns of %s still there: %v", id, err)
	}
	if _, err := os.Stat(e.allocation(ip)); !errors.Is(err, fs.ErrNotExist) {
		e.t.Errorf("allocation of %s still there: %v", ip, err)
	}
	ipRE := regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(ip.String()) + `([^0-9]|$)`)
	rules := e.iptablesSave()
	if ipRE.MatchString(rules) || strings.Contains(rules, id) {
		e.t.Errorf("iptables still mentions %s or %s:\n%s", ip, id, rules)
	}
}

// bridgePorts returns the names of the links enslaved to the test bridge.
func (e *env) bridgePorts() []string {
	e.t.Helper()
	br, err := netlink.LinkByName(e.cfg.Bridge)
	if err != nil {
		return nil
	}
	links, err := netlink.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		e.t.Fatal(err)
	}
	var ports []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			ports = append(ports, l.Attrs().Name)
		}
	}
	return ports
}

// listen serves "hello" on port in the namespace at path until the test ends.
func listen(t *testing.T, path string, port int) {
	t.Helper()
	var ln net.Listener
	err := inNetNS(path, func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello")
			c.Close()
		}
	}()
}

// dial connects to addr, from the namespace at path or from the host if path is
// "", and returns what the server sent.
func dial(path, addr string) (string, error) {
	var got string
	do := func() error {
		c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		b, err := io.ReadAll(c)
		got = string(b)
		return err
	}
	if path == "" {
		return got, do()
	}
	return got, inNetNS(path, do)
}

// freeLoopbackPort returns a TCP port nothing listens on at 127.0.0.1.
func freeLoopbackPort(t *testing.T) int32 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}
