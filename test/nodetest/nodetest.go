// Package nodetest leaves a machine as a test found it after running a real
// skiff node agent: containers, network namespaces, the CNI bridge, cgroups
// and the agent's containerd.
package nodetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/supervisor"
)

// Node names what one test's agent creates on the machine.
type Node struct {
	DataDir    string // the agent's --data-dir
	NetNSDir   string
	Bridge     string
	CgroupRoot string
	Namespace  string // containerd namespace; "skiff" if empty
}

// New names a node with unique names under dir.
func New(dir string) Node {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	return Node{DataDir: dir, NetNSDir: filepath.Join(dir, "netns"), Bridge: "skt" + suffix, CgroupRoot: "/skiff-test-" + suffix}
}

// Clean removes, and reports as test errors, containers and network
// namespaces the agent left, then stops its containerd and removes the
// bridge and the cgroups. Call it after the agent has stopped.
func (n Node) Clean(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := supervisor.Start(ctx, supervisor.Config{Dir: filepath.Join(n.DataDir, "agent", "containerd")})
	if err == nil {
		n.sweepContainers(ctx, t, d.Address())
		if err := d.Stop(ctx); err != nil {
			t.Errorf("stop containerd: %v", err)
		}
	}
	n.sweepNetwork(ctx, t)
	_ = exec.Command("ip", "link", "del", n.Bridge).Run()
	n.sweepCgroups(t)
}

// PodCgroups lists the pod cgroups under the node's cgroup root, in every
// hierarchy.
func (n Node) PodCgroups() []string {
	var dirs []string
	for _, pattern := range []string{"/sys/fs/cgroup/*" + n.CgroupRoot + "/pod*", "/sys/fs/cgroup" + n.CgroupRoot + "/pod*"} {
		found, _ := filepath.Glob(pattern)
		dirs = append(dirs, found...)
	}
	return dirs
}

// sweepCgroups reports pod cgroups left behind, then removes the test's
// cgroup tree in every hierarchy.
func (n Node) sweepCgroups(t testing.TB) {
	for _, dir := range n.PodCgroups() {
		t.Errorf("pod cgroup left behind: %s", dir)
	}
	cgroups := "/sys/fs/cgroup/*" + n.CgroupRoot + " /sys/fs/cgroup" + n.CgroupRoot
	_ = exec.Command("sh", "-c", "find "+cgroups+" -depth -type d -exec rmdir {} + 2>/dev/null").Run()
}

func (n Node) sweepContainers(ctx context.Context, t testing.TB, address string) {
	ns := n.Namespace
	if ns == "" {
		ns = "skiff"
	}
	rt, err := cri.Connect(ctx, cri.Config{Address: address, Namespace: ns, StateDir: t.TempDir(), PodLogDir: t.TempDir()})
	if err != nil {
		t.Errorf("connect to containerd: %v", err)
		return
	}
	defer rt.Close()
	_ = rt.RemoveAll(ctx, func(c cri.Container) {
		t.Errorf("left behind: %s %s of pod %s/%s", c.Kind, c.Name, c.Pod.Namespace, c.Pod.Name)
	})
}

func (n Node) sweepNetwork(ctx context.Context, t testing.TB) {
	dir := filepath.Join(n.DataDir, "agent", "cni")
	net := cni.New(cni.Config{ConfDir: filepath.Join(dir, "net.d"), CacheDir: filepath.Join(dir, "cache"), NetNSDir: n.NetNSDir, Bridge: n.Bridge})
	_ = net.TeardownAll(ctx, func(id string) { t.Errorf("network namespace left behind: %s", id) })
	if err := net.RemoveMasquerade(); err != nil {
		t.Errorf("remove masquerade: %v", err)
	}
}
