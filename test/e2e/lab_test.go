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
)

// lab is a cluster of several nodes on this machine, made by
// test/vm/lab.sh: each node in its network namespace on the lab bridge,
// the agents joined with the server's token.
type lab struct {
	*cluster
	env []string
}

// labNet is the lab's subnet (lab.sh's LAB_NET): node lab-server is .1,
// lab-nodeN .(N+1); the host is .254.
const labNet = "10.213.0."

// startLab brings up a server and n agents with lab.sh, the test image
// imported on every node, and brings them down when the test ends,
// checking that nothing of the lab is left.
func startLab(t *testing.T, n int, serverArgs ...string) *lab {
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
	l := &lab{env: []string{"LAB_DIR=" + filepath.Join(dir, "lab"), "SKIFF=" + skiffBin, "LAB_IMAGES=" + imgs,
		"LAB_SERVER_ARGS=" + strings.Join(serverArgs, " ")}}
	t.Cleanup(func() { l.down(t) })
	out, err := l.script("up", fmt.Sprint(n))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	kubeconfig, ok := strings.CutPrefix(lines[len(lines)-1], "KUBECONFIG=")
	if err != nil || !ok {
		t.Fatalf("lab.sh up %d: %v\n%s", n, err, out)
	}
	l.cluster = &cluster{t: t, dataDir: dir, kubeconfig: kubeconfig}
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
func (l *lab) down(t *testing.T) {
	if out, err := l.script("down"); err != nil {
		t.Errorf("lab.sh down: %v\n%s", err, out)
	}
	dir := l.labDir()
	checks := map[string]string{
		"processes":  "pgrep -af " + dir + "/ | grep -v pgrep || true",
		"namespaces": "ip netns list | grep '^lab-' || true",
		"links":      "ip -o link show | grep -E 'skifflab0|vnode[0-9]|vserver' || true",
		"mounts":     "findmnt -rn -o TARGET | grep '^" + dir + "/' || true",
		"cgroups":    "find /sys/fs/cgroup -maxdepth 2 -name 'skiff-lab-*' || true",
	}
	for what, check := range checks {
		if out, _ := exec.Command("sh", "-c", check).CombinedOutput(); len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("lab.sh down left %s:\n%s", what, out)
		}
	}
}

// labIP is the lab address of a node.
func labIP(node string) string {
	if node == "lab-server" {
		return labNet + "1"
	}
	var n int
	fmt.Sscanf(node, "lab-node%d", &n)
	return labNet + fmt.Sprint(n+1)
}

// labDir is lab.sh's LAB_DIR.
func (l *lab) labDir() string { return strings.TrimPrefix(l.env[0], "LAB_DIR=") }
