package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/skiff-lab/skiff/test/images"
)

// busyboxRef is the image the VM tier's pods run, imported by the agents
// from the share (there is no registry).
const busyboxRef = "skiff.test/busybox:vm"

// cluster is a skiff server VM and agent VMs, installed as the Vagrantfile
// installs them: test/vm/provision.sh --node (in the image), then
// test/vm/node.sh with the skiff binary from the share.
type cluster struct {
	t      testing.TB
	server *VM
	agent  *VM
}

// requireVMTier skips unless the VM tier was asked for (make test-vm).
func requireVMTier(t testing.TB) {
	if os.Getenv("SKIFF_TEST_VM") == "" {
		t.Skip("the VM tier boots QEMU VMs for minutes: run it with make test-vm (SKIFF_TEST_VM=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the VM tier builds its image as root")
	}
}

// buildImage builds (or finds up to date) the VM image for arch.
func buildImage(t testing.TB, arch string) image {
	t.Helper()
	if _, err := exec.LookPath(machines[arch].qemu); err != nil {
		t.Skipf("%s is not installed: QEMU cannot boot a %s VM here (test/vm/provision.sh installs it)", machines[arch].qemu, arch)
	}
	dir := filepath.Join(cacheDir(), arch)
	cmd := exec.Command("bash", "image.sh", "--arch", arch, "--out", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("image.sh: %v", err)
	}
	return image{dir: dir, arch: arch}
}

func cacheDir() string {
	if d := os.Getenv("SKIFF_VM_CACHE"); d != "" {
		return d
	}
	return "/var/cache/skiff-vm"
}

// share makes the directory the VMs mount at /mnt/skiff: the skiff binary
// to install, node.sh, and a busybox image of the VMs' architecture.
func share(t testing.TB, img image) string {
	t.Helper()
	dir := t.TempDir()
	bin := os.Getenv("SKIFF_BINARY")
	if bin == "" {
		t.Fatal("SKIFF_BINARY: the skiff binary to install (make test-vm sets it)")
	}
	copyFile(t, bin, filepath.Join(dir, "skiff"), 0o755)
	copyFile(t, "node.sh", filepath.Join(dir, "node.sh"), 0o755)
	tar, err := images.BusyboxFrom(busyboxRef, filepath.Join(img.dir, "busybox"), img.arch)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "images", "busybox.tar"), tar, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t testing.TB, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// keys are the image's login key and the VMs' host key.
func keys(t testing.TB, img image) (ssh.Signer, ssh.PublicKey) {
	t.Helper()
	priv, err := os.ReadFile(filepath.Join(img.dir, "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(img.dir, "ssh_host_ed25519_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	host, _, _, _, err := ssh.ParseAuthorizedKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return signer, host
}

// startCluster boots a server VM and an agent VM of arch, joined by a
// QEMU socket link (point to point: two VMs), and connects to both.
func startCluster(t testing.TB, arch string) *cluster {
	t.Helper()
	img := buildImage(t, arch)
	return bootCluster(t, img, accelerator(t, img))
}

func bootCluster(t testing.TB, img image, accel string) *cluster {
	t.Helper()
	t.Logf("booting 2 %s VMs with %s", img.arch, accel)
	dir, sh := t.TempDir(), share(t, img)
	signer, host := keys(t, img)
	seg := freePort(t)
	c := &cluster{t: t}
	c.server = bootVM(t, img, accel, dir, "skiff-server", "10.99.0.10", 0x10, sh, link{seg, true}, 2048)
	waitListening(t, seg)
	c.agent = bootVM(t, img, accel, dir, "skiff-agent", "10.99.0.11", 0x11, sh, link{seg, false}, 1536)
	for _, v := range []*VM{c.server, c.agent} {
		v.auth, v.hostKey = signer, host
		v.connect(5 * time.Minute)
		v.waitShare()
	}
	return c
}

// waitListening waits until a local TCP port is listening (read from
// /proc/net/tcp: a probe connection would be taken as the link's peer).
func waitListening(t testing.TB, port int) {
	t.Helper()
	want := fmt.Sprintf(":%04X 00000000:0000 0A", port)
	for range 100 {
		if data, _ := os.ReadFile("/proc/net/tcp"); strings.Contains(string(data), want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("QEMU is not listening on port %d after 10s", port)
}
