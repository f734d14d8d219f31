package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// image is a built VM image (test/vm/image.sh's output directory).
type image struct {
	dir, arch string
}

// machine is what an architecture's VMs boot with.
var machines = map[string]struct {
	qemu, console string
	args          []string
}{
	"amd64": {"qemu-system-x86_64", "ttyS0", nil},
	"arm64": {"qemu-system-aarch64", "ttyAMA0", []string{"-machine", "virt", "-cpu", "cortex-a57"}},
}

// VM is one QEMU guest: systemd as PID 1, reached over ssh through a
// port QEMU forwards from 127.0.0.1, on the cluster's private L2 segment
// (a QEMU socket netdev between the VMs, nothing on the host's network).
type VM struct {
	Name, IP string
	t        testing.TB
	sshPort  int
	cmd      *exec.Cmd
	exited   chan struct{}
	serial   string
	client   *ssh.Client
	auth     ssh.Signer
	hostKey  ssh.PublicKey
}

// link is the cluster segment: the first VM listens, the others connect.
type link struct {
	port   int
	listen bool
}

// bootVM starts a VM of img with its own copy-on-write disk in dir.
func bootVM(t testing.TB, img image, accel, dir, name, ip string, mac byte, share string, seg link, memMB int) *VM {
	t.Helper()
	disk := filepath.Join(dir, name+".qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-b", filepath.Join(img.dir, "rootfs.img"), "-F", "raw", disk)
	m := machines[img.arch]
	v := &VM{Name: name, IP: ip, t: t, sshPort: freePort(t), serial: filepath.Join(dir, name+".serial.log"), exited: make(chan struct{})}
	netdev := fmt.Sprintf("socket,id=c0,connect=127.0.0.1:%d", seg.port)
	if seg.listen {
		netdev = fmt.Sprintf("socket,id=c0,listen=127.0.0.1:%d", seg.port)
	}
	args := append(append([]string{}, m.args...),
		"-accel", accel, "-m", strconv.Itoa(memMB), "-smp", "2", "-display", "none", "-monitor", "none",
		"-serial", "file:"+v.serial,
		"-kernel", filepath.Join(img.dir, "vmlinuz"), "-initrd", filepath.Join(img.dir, "initrd.img"),
		"-append", fmt.Sprintf("root=/dev/vda rw console=%s systemd.hostname=%s ip=%s:::255.255.255.0:%s:ens4:off", m.console, name, ip, name),
		"-drive", "file="+disk+",format=qcow2,if=virtio",
		"-netdev", fmt.Sprintf("user,id=u0,restrict=on,hostfwd=tcp:127.0.0.1:%d-:22", v.sshPort),
		"-device", "virtio-net-pci,netdev=u0,addr=0x3",
		"-netdev", netdev, "-device", fmt.Sprintf("virtio-net-pci,netdev=c0,addr=0x4,mac=52:54:00:99:00:%02x", mac),
		"-virtfs", "local,path="+share+",mount_tag=skiff,security_model=none,readonly=on")
	v.cmd = exec.Command(m.qemu, args...)
	v.cmd.Stderr = &bytes.Buffer{}
	if err := v.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { v.cmd.Wait(); close(v.exited) }()
	t.Cleanup(v.stop)
	return v
}

// stop powers the VM off: a clean shutdown if it answers, else killed.
func (v *VM) stop() {
	if v.client != nil {
		_, _ = v.Try("systemctl poweroff", 10*time.Second)
		v.client.Close()
	}
	select {
	case <-v.exited:
	case <-time.After(60 * time.Second):
		_ = v.cmd.Process.Kill()
		<-v.exited
	}
}

// connect waits until the VM answers ssh (it booted).
func (v *VM) connect(timeout time.Duration) {
	v.t.Helper()
	cfg := &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(v.auth)},
		HostKeyCallback: ssh.FixedHostKey(v.hostKey), HostKeyAlgorithms: []string{v.hostKey.Type()}, Timeout: 10 * time.Second}
	deadline := time.Now().Add(timeout)
	delay := time.Second
	for {
		c, err := ssh.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(v.sshPort)), cfg)
		if err == nil {
			v.client = c
			return
		}
		select {
		case <-v.exited:
			v.t.Fatalf("%s: QEMU exited: %s\n%s", v.Name, v.cmd.Stderr, v.serialTail())
		default:
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("%s: no ssh after %s: %v\n%s", v.Name, timeout, err, v.serialTail())
		}
		time.Sleep(delay)
		delay = min(2*delay, 5*time.Second)
	}
}

// waitShare waits until the host's share is mounted at /mnt/skiff (its
// mount unit may come after sshd).
func (v *VM) waitShare() {
	v.t.Helper()
	out, err := v.Try("until mountpoint -q /mnt/skiff; do systemctl start mnt-skiff.mount || sleep 1; done", 2*time.Minute)
	if err != nil {
		v.t.Fatalf("%s: /mnt/skiff not mounted: %v\n%s", v.Name, err, out)
	}
}

// Run runs a shell command as root in the VM and returns its output; a
// failure fails the test.
func (v *VM) Run(cmd string) string {
	v.t.Helper()
	out, err := v.Try(cmd, 10*time.Minute)
	if err != nil {
		v.t.Fatalf("%s: %s: %v\n%s", v.Name, cmd, err, out)
	}
	return out
}

// Try runs cmd and returns its combined output and error.
func (v *VM) Try(cmd string, timeout time.Duration) (string, error) {
	return v.exec(cmd, "", timeout)
}

// TryInput runs cmd with stdin.
func (v *VM) TryInput(cmd, stdin string) (string, error) {
	return v.exec(cmd, stdin, 10*time.Minute)
}

// exec runs cmd in a session of its own; past timeout it gives up on it
// (the session is closed).
func (v *VM) exec(cmd, stdin string, timeout time.Duration) (string, error) {
	if v.client == nil {
		return "", errors.New("not connected")
	}
	s, err := v.client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	s.Stdin = strings.NewReader(stdin)
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.CombinedOutput(cmd)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return strings.TrimSpace(string(r.out)), r.err
	case <-time.After(timeout):
		return "", fmt.Errorf("%s: no answer in %s", cmd, timeout)
	}
}

// Reboot reboots the guest (QEMU stays) and waits until it answers again.
func (v *VM) Reboot() {
	v.t.Helper()
	_, _ = v.Try("systemctl reboot", 10*time.Second)
	v.client.Close()
	v.client = nil
	// Let sshd go down before knocking again.
	time.Sleep(5 * time.Second)
	v.connect(5 * time.Minute)
}

func (v *VM) serialTail() string {
	data, _ := os.ReadFile(v.serial)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// accelerator is "kvm" when a KVM guest boots here (its kernel prints
// within seconds), else "tcg" (software emulation), or SKIFF_VM_ACCEL.
func accelerator(t testing.TB, img image) string {
	if a := os.Getenv("SKIFF_VM_ACCEL"); a != "" {
		return a
	}
	if _, err := os.Stat("/dev/kvm"); err != nil || img.arch != hostArch() {
		return "tcg,thread=multi"
	}
	serial := filepath.Join(t.TempDir(), "probe.log")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := machines[img.arch]
	cmd := exec.CommandContext(ctx, m.qemu, append(append([]string{}, m.args...), "-accel", "kvm", "-m", "256", "-display", "none",
		"-monitor", "none", "-no-reboot", "-serial", "file:"+serial, "-kernel", filepath.Join(img.dir, "vmlinuz"),
		"-append", "console="+m.console+" panic=-1")...)
	if err := cmd.Start(); err != nil {
		return "tcg,thread=multi"
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for ctx.Err() == nil {
		if data, _ := os.ReadFile(serial); bytes.Contains(data, []byte("Linux version")) {
			t.Logf("KVM boots a guest here: using it")
			return "kvm"
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("a KVM guest printed nothing in 20s (nested KVM that does not run Debian's kernel): using TCG")
	return "tcg,thread=multi"
}

func hostArch() string {
	out, _ := exec.Command("dpkg", "--print-architecture").Output()
	return strings.TrimSpace(string(out))
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
