package supervisor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/skiff-lab/skiff/test/images"
)

const testNamespace = "skiff-test"

// testConfig returns a Config with a fresh short directory (so the socket
// path stays short). When the test ends, any daemon still running with
// its config is an error, and is killed.
func testConfig(t *testing.T) Config {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs containerd")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root")
	}
	dir, err := os.MkdirTemp("", "skiff-ctd-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: dir}
	if _, err := cfg.withDefaults(); err != nil {
		t.Skipf("integration test: %v", err)
	}
	t.Cleanup(func() {
		configPath := filepath.Join(dir, configFile)
		pids, _ := processesFor(configPath)
		for _, pid := range pids {
			t.Errorf("containerd %d for %s still running at cleanup; killing it", pid, configPath)
			signalAndWait(context.Background(), pid, configPath, nil, syscall.SIGKILL, killTimeout)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	return cfg
}

// startTest starts a containerd for testConfig and always stops it.
func startTest(t *testing.T) (*Daemon, Config) {
	t.Helper()
	cfg := testConfig(t)
	d, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, d) })
	return d, cfg
}

func stop(t *testing.T, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		t.Error(err)
	}
}

func newClient(t *testing.T, d *Daemon) *client.Client {
	t.Helper()
	c, err := client.New(d.Address(), client.WithDefaultNamespace(testNamespace))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDaemonStartAdoptRestart(t *testing.T) {
	d, cfg := startTest(t)
	ctx := t.Context()
	if d.Adopted() {
		t.Error("first Start adopted a daemon, want started")
	}
	c := newClient(t, d)
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("containerd %s (%s) pid %d on %s", v.Version, v.Revision, d.Pid(), d.Address())

	const ref = "docker.io/library/busybox:latest"
	tarball, err := images.Busybox(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, bytes.NewReader(tarball)); err != nil {
		t.Fatalf("import busybox: %v", err)
	}
	checkImage(t, c, ref)

	d2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, d2) })
	if !d2.Adopted() || d2.Pid() != d.Pid() {
		t.Fatalf("second Start: adopted %v pid %d, want adopted pid %d", d2.Adopted(), d2.Pid(), d.Pid())
	}

	sctx, cancel := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() { d2.Supervise(sctx); close(supervised) }()
	defer func() { cancel(); <-supervised }()

	// Twice: first the adopted daemon (watched through /proc), then the
	// one Supervise started (its own child).
	for range 2 {
		old := d2.Pid()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitRestarted(t, d2, old)
		checkImage(t, c, ref) // the client reconnects; the image store persists
	}

	cancel()
	<-supervised
	if err := ping(ctx, d2.Address()); err != nil {
		t.Errorf("daemon not answering after Supervise returned: %v", err)
	}
	pid := d2.Pid()
	stop(t, d2)
	if pids, _ := processesFor(filepath.Join(cfg.Dir, configFile)); len(pids) > 0 {
		t.Errorf("containerd processes %v remain after Stop", pids)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("pid %d still exists after Stop", pid)
	}
	if err := ping(ctx, d2.Address()); err == nil {
		t.Error("socket still answers after Stop")
	}
}

// TestDaemonOutlivesStarter starts the daemon from another process, kills
// that process with SIGKILL (as an agent crash would) and adopts the daemon.
func TestDaemonOutlivesStarter(t *testing.T) {
	cfg := testConfig(t)
	starter := exec.Command(os.Args[0])
	starter.Env = append(os.Environ(), helperEnv+"=start", helperDirEnv+"="+cfg.Dir)
	out, err := starter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	starter.Stderr = os.Stderr
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	defer starter.Wait()
	defer starter.Process.Kill()
	var pid int
	if _, err := fmt.Fscanln(out, &pid); err != nil {
		t.Fatalf("starter printed no pid: %v", err)
	}
	starter.Process.Signal(syscall.SIGKILL)
	starter.Wait()

	d, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, d) })
	if !d.Adopted() || d.Pid() != pid {
		t.Errorf("Start after the starter died: adopted %v pid %d, want adopted pid %d", d.Adopted(), d.Pid(), pid)
	}
	stop(t, d)
	if runsConfig(pid, filepath.Join(cfg.Dir, configFile)) {
		t.Errorf("adopted daemon %d still runs after Stop", pid)
	}
}

// runStarter is the helper process of TestDaemonOutlivesStarter: it starts
// a daemon, prints its pid and waits to be killed.
func runStarter() {
	d, err := Start(context.Background(), Config{Dir: os.Getenv(helperDirEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(d.Pid())
	time.Sleep(time.Hour)
}

func TestDaemonReplacedWhenConfigChanges(t *testing.T) {
	d, cfg := startTest(t)
	cfg.Address = filepath.Join(cfg.Dir, "other.sock")
	d2, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, d2) })
	if d2.Adopted() || d2.Pid() == d.Pid() {
		t.Errorf("Start with a new address: adopted %v pid %d (old pid %d), want a new daemon", d2.Adopted(), d2.Pid(), d.Pid())
	}
	if runsConfig(d.Pid(), filepath.Join(cfg.Dir, configFile)) {
		t.Errorf("old daemon %d still runs", d.Pid())
	}
	if err := ping(t.Context(), d2.Address()); err != nil {
		t.Error(err)
	}
}

func waitRestarted(t *testing.T, d *Daemon, old int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pid := d.Pid()
		if pid != old && ping(t.Context(), d.Address()) == nil {
			if d.Adopted() {
				t.Errorf("restart adopted pid %d, want a new daemon", pid)
			}
			t.Logf("restarted: pid %d → %d", old, pid)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not restarted 30s after killing pid %d (pid now %d)", old, pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func checkImage(t *testing.T, c *client.Client, ref string) {
	t.Helper()
	imgs, err := c.ListImages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if img.Name() == ref {
			return
		}
	}
	t.Errorf("image %s not listed (%d images)", ref, len(imgs))
}

func TestDaemonRunsPauseContainer(t *testing.T) {
	d, _ := startTest(t)
	c := newClient(t, d)
	ctx := t.Context()

	const ref = "skiff.local/pause:test"
	tarball, err := images.Pause(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, bytes.NewReader(tarball)); err != nil {
		t.Fatalf("import pause: %v", err)
	}
	img, err := c.GetImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := img.Unpack(ctx, ""); err != nil {
		t.Fatalf("unpack: %v", err)
	}

	id := "pause-" + randomHex(t)
	cgroupRoot := "/skiff-test-" + randomHex(t)
	t.Cleanup(func() { removeCgroupRoot(cgroupRoot) })
	ctr, err := c.NewContainer(ctx, id,
		client.WithNewSnapshot(id, img),
		client.WithNewSpec(oci.WithDefaultSpec(), oci.WithImageConfig(img), oci.WithCgroup(cgroupRoot+"/"+id)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if task, err := ctr.Task(ctx, nil); err == nil {
			task.Delete(ctx, client.WithProcessKill)
		}
		if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil {
			t.Errorf("delete container: %v", err)
		}
	})
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	exitC, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-exitC:
		t.Fatalf("pause exited right away: %d %v", st.ExitCode(), st.Error())
	case <-time.After(time.Second):
	}
	if st, err := task.Status(ctx); err != nil || st.Status != client.Running {
		t.Fatalf("status = %+v, %v; want running", st, err)
	}

	// The container outlives its containerd: kill it, let Supervise start a
	// new one, and find the task still running through its shim.
	go d.Supervise(ctx) // returns when the test's context ends, before the cleanups
	old := d.Pid()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRestarted(t, d, old)
	if task, err = ctr.Task(ctx, nil); err != nil {
		t.Fatalf("task after containerd restart: %v", err)
	}
	if st, err := task.Status(ctx); err != nil || st.Status != client.Running {
		t.Fatalf("status after containerd restart = %+v, %v; want running", st, err)
	}
	if exitC, err = task.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	if err := task.Kill(ctx, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-exitC:
		if code, _, err := st.Result(); err != nil || code != 0 {
			t.Errorf("pause exited with %d (%v), want 0", code, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pause did not exit within 5s of SIGTERM")
	}
	if _, err := task.Delete(ctx); err != nil {
		t.Errorf("delete task: %v", err)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// removeCgroupRoot removes the test's (empty) cgroup root in every hierarchy.
func removeCgroupRoot(root string) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + root)
	dirs = append(dirs, "/sys/fs/cgroup"+root)
	for _, dir := range dirs {
		_ = os.Remove(dir)
	}
}
