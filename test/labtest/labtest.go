// Package labtest drives test/vm/lab.sh from Go tests: a lab of skiff
// nodes on this machine, each in a network namespace on the lab's bridge,
// brought up for one test and taken down when it ends, with a check that
// nothing of it is left.
package labtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/test/nodetest"
)

// Bridge is the host's link to the lab (lab.sh's HOST_LINK).
const Bridge = "skifflab0"

// Config is what lab.sh brings up.
type Config struct {
	Agents                int
	Servers               int // more than one: a cluster of servers (LAB_SERVERS)
	ServerArgs, AgentArgs []string
	Routed                bool              // a subnet per node, routed by the host (LAB_ROUTED)
	SmallDisk             []string          // nodes whose data dir is a small file system of its own (LAB_SMALL_DISK)
	Skiff                 string            // the binary the nodes run
	Images                map[string][]byte // file name → image tarball every node imports
}

// Lab is a lab made for one test.
type Lab struct {
	Config
	Dir        string // LAB_DIR
	Kubeconfig string // the first server's admin kubeconfig, once up
	env        []string
}

// New prepares a lab (not up yet) that is taken down at the test's end.
// It skips the test where a lab cannot run.
func New(t testing.TB, cfg Config) *Lab {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("lab: needs root, containerd, runc, CNI plugins")
	}
	dir := t.TempDir()
	imgs := filepath.Join(dir, "images")
	if err := os.MkdirAll(imgs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, tar := range cfg.Images {
		if err := os.WriteFile(filepath.Join(imgs, name), tar, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := &Lab{Config: cfg, Dir: filepath.Join(dir, "lab")}
	l.env = []string{"LAB_DIR=" + l.Dir, "SKIFF=" + cfg.Skiff, "LAB_IMAGES=" + imgs,
		"LAB_SERVER_ARGS=" + strings.Join(cfg.ServerArgs, " "), "LAB_AGENT_ARGS=" + strings.Join(cfg.AgentArgs, " "),
		"LAB_SMALL_DISK=" + strings.Join(cfg.SmallDisk, " ")}
	if cfg.Routed {
		l.env = append(l.env, "LAB_ROUTED=1")
	}
	if cfg.Servers > 1 {
		l.env = append(l.env, fmt.Sprintf("LAB_SERVERS=%d", cfg.Servers))
	}
	// What the host sends to the lab's addresses goes to the lab's link
	// or nowhere, should the lab be gone.
	nodetest.Node{Bridge: Bridge}.GuardServiceTraffic(t, "10.213.0.0/16")
	t.Cleanup(func() { l.Down(t) })
	return l
}

// Start brings up a lab (New, then Up).
func Start(t testing.TB, cfg Config) *Lab {
	t.Helper()
	l := New(t, cfg)
	l.Up(t)
	return l
}

// Up runs lab.sh up: every node Ready.
func (l *Lab) Up(t testing.TB) {
	t.Helper()
	out, err := l.Script("up", fmt.Sprint(l.Agents))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	kubeconfig, ok := strings.CutPrefix(lines[len(lines)-1], "KUBECONFIG=")
	if err != nil || !ok {
		t.Fatalf("lab.sh up %d: %v\n%s", l.Agents, err, out)
	}
	l.Kubeconfig = kubeconfig
}

// Script runs lab.sh with args; stdout and stderr come back together.
func (l *Lab) Script(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(), "test", "vm", "lab.sh"), args...)
	cmd.Env = append(os.Environ(), l.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Must runs lab.sh with args and fails the test if it fails.
func (l *Lab) Must(t testing.TB, args ...string) {
	t.Helper()
	if out, err := l.Script(args...); err != nil {
		t.Fatalf("lab.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Down runs lab.sh down and reports whatever of the lab is left: a
// process, network namespace, link, mount, loop device or cgroup.
func (l *Lab) Down(t testing.TB) {
	if out, err := l.Script("down"); err != nil {
		t.Errorf("lab.sh down: %v\n%s", err, out)
	}
	checks := map[string]string{
		"processes":    "pgrep -af " + l.Dir + "/ | grep -v pgrep || true",
		"namespaces":   "ip netns list | grep '^lab-' || true",
		"links":        "ip -o link show | grep " + Bridge + " || true",
		"mounts":       "findmnt -rn -o TARGET | grep '^" + l.Dir + "' || true",
		"loop devices": "losetup -a | grep '" + l.Dir + "/' || true",
		"cgroups":      "find /sys/fs/cgroup -maxdepth 2 -name 'skiff-lab-*' || true",
	}
	for what, check := range checks {
		if out, _ := exec.Command("sh", "-c", check).CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("lab.sh down left %s:\n%s", what, out)
		}
	}
}

// IP is the lab address of a node (lab.sh's node_ip with LAB_NET
// 10.213.0): flat, lab-server is 10.213.0.1, lab-nodeN 10.213.0.(N+1) and
// lab-serverK 10.213.0.(253-K); routed, lab-nodeN is 10.213.N.1 and
// lab-serverK 10.213.(200+K).1.
func (l *Lab) IP(node string) string {
	var n, k int
	if _, err := fmt.Sscanf(node, "lab-server%d", &k); err == nil {
		if l.Routed {
			return fmt.Sprintf("10.213.%d.1", 200+k)
		}
		return fmt.Sprintf("10.213.0.%d", 253-k)
	}
	fmt.Sscanf(node, "lab-node%d", &n) // lab-server: 0
	if l.Routed {
		return fmt.Sprintf("10.213.%d.1", n)
	}
	return fmt.Sprintf("10.213.0.%d", n+1)
}

// ServerNames are the lab's servers: lab-server, lab-server2 …
func (l *Lab) ServerNames() []string {
	out := []string{"lab-server"}
	for k := 2; k <= l.Servers; k++ {
		out = append(out, fmt.Sprintf("lab-server%d", k))
	}
	return out
}

// Nodes are the lab's node names: the servers, then the agents.
func (l *Lab) Nodes() []string {
	out := l.ServerNames()
	for i := 1; i <= l.Agents; i++ {
		out = append(out, fmt.Sprintf("lab-node%d", i))
	}
	return out
}

// NodeDir is a node's data dir.
func (l *Lab) NodeDir(node string) string { return filepath.Join(l.Dir, node) }

// ServerKubeconfig is the admin kubeconfig that points at one server.
func (l *Lab) ServerKubeconfig(server string) string {
	if server == "lab-server" {
		return l.Kubeconfig
	}
	return filepath.Join(l.Dir, server, "admin.kubeconfig")
}

// Build runs make's targets with BIN=dir, so that tests run what a user
// builds (`make build` is bin/skiff).
func Build(dir string, targets ...string) error {
	build := exec.Command("make", append([]string{"-s", "BIN=" + dir}, targets...)...)
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("make %s: %v\n%s", strings.Join(targets, " "), err, out)
	}
	return nil
}

// RepoRoot is the checkout that holds the running test: the nearest
// directory above the working directory (go test runs a test in its
// package's directory) whose go.mod is skiff's. Source file names would
// not do: builds with -trimpath (the Makefile's) hold none.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		if bytes.HasPrefix(mod, []byte("module github.com/skiff-lab/skiff\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("no checkout of skiff holds " + dir)
		}
		dir = parent
	}
}
