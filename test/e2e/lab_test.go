package e2e

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

	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/test/nodetest"
)

// lab is a cluster of several nodes on this machine, made by
// test/vm/lab.sh: each node in its network namespace on the lab bridge,
// the agents joined with the server's token.
type lab struct {
	*cluster
	labConfig
	env []string
}

// labConfig is what lab.sh brings up.
type labConfig struct {
	agents                int
	servers               int // more than one: a cluster of servers (LAB_SERVERS)
	serverArgs, agentArgs []string
	routed                bool // a subnet per node, routed by the host (LAB_ROUTED)
}

// startLab brings up a server and the agents with lab.sh, the test image
// imported on every node, and brings them down when the test ends,
// checking that nothing of the lab is left.
func startLab(t testing.TB, cfg labConfig) *lab {
	t.Helper()
	l := newLab(t, cfg)
	out, err := l.script("up", fmt.Sprint(cfg.agents))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	kubeconfig, ok := strings.CutPrefix(lines[len(lines)-1], "KUBECONFIG=")
	if err != nil || !ok {
		t.Fatalf("lab.sh up %d: %v\n%s", cfg.agents, err, out)
	}
	l.cluster.kubeconfig = kubeconfig
	return l
}

// newLab prepares a lab (not up yet) that is taken down at the test's end.
func newLab(t testing.TB, cfg labConfig) *lab {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("lab: needs root, containerd, runc, CNI plugins")
	}
	dir := t.TempDir()
	tar, err := images.Busybox(e2eImage)
	if err != nil {
		t.Fatal(err)
	}
	imgs := filepath.Join(dir, "images")
	if err := os.MkdirAll(imgs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(imgs, "busybox.tar"), tar, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &lab{labConfig: cfg, env: []string{"LAB_DIR=" + filepath.Join(dir, "lab"), "SKIFF=" + skiffBin, "LAB_IMAGES=" + imgs,
		"LAB_SERVER_ARGS=" + strings.Join(cfg.serverArgs, " "), "LAB_AGENT_ARGS=" + strings.Join(cfg.agentArgs, " ")}}
	if cfg.routed {
		l.env = append(l.env, "LAB_ROUTED=1")
	}
	if cfg.servers > 1 {
		l.env = append(l.env, fmt.Sprintf("LAB_SERVERS=%d", cfg.servers))
	}
	l.cluster = &cluster{t: t, dataDir: dir}
	// What the host sends to the lab's addresses goes to the lab's link
	// or nowhere, should the lab be gone.
	nodetest.Node{Bridge: "skifflab0"}.GuardServiceTraffic(t, "10.213.0.0/16")
	t.Cleanup(func() { l.down(t) })
	return l
}

// script runs lab.sh with args; stdout and stderr come back together.
func (l *lab) script(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(), "test", "vm", "lab.sh"), args...)
	cmd.Env = append(os.Environ(), l.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// down runs lab.sh down and reports whatever of the lab is left: a
// process, network namespace, link, mount or cgroup.
func (l *lab) down(t testing.TB) {
	if out, err := l.script("down"); err != nil {
		t.Errorf("lab.sh down: %v\n%s", err, out)
	}
	dir := l.labDir()
	checks := map[string]string{
		"processes":  "pgrep -af " + dir + "/ | grep -v pgrep || true",
		"namespaces": "ip netns list | grep '^lab-' || true",
		"links":      "ip -o link show | grep skifflab0 || true",
		"mounts":     "findmnt -rn -o TARGET | grep '^" + dir + "/' || true",
		"cgroups":    "find /sys/fs/cgroup -maxdepth 2 -name 'skiff-lab-*' || true",
	}
	for what, check := range checks {
		if out, _ := exec.Command("sh", "-c", check).CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("lab.sh down left %s:\n%s", what, out)
		}
	}
}

// ip is the lab address of a node (lab.sh's node_ip with LAB_NET
// 10.213.0): flat, lab-server is 10.213.0.1 and lab-nodeN 10.213.0.(N+1);
// routed, lab-nodeN is 10.213.N.1.
func (l *lab) ip(node string) string {
	var n int
	fmt.Sscanf(node, "lab-node%d", &n) // lab-server: 0
	if l.routed {
		return fmt.Sprintf("10.213.%d.1", n)
	}
	return fmt.Sprintf("10.213.0.%d", n+1)
}

// nodes are the lab's node names.
func (l *lab) nodes() []string {
	out := []string{"lab-server"}
	for i := 1; i <= l.agents; i++ {
		out = append(out, fmt.Sprintf("lab-node%d", i))
	}
	return out
}

// labDir is lab.sh's LAB_DIR.
func (l *lab) labDir() string { return strings.TrimPrefix(l.env[0], "LAB_DIR=") }
