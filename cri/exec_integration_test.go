package cri_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/google/uuid"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/supervisor"
	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/test/nodetest"
)

const (
	execPause   = "skiff.local/pause:exec"
	execBusybox = "skiff.test/busybox:exec"
)

// TestExec runs commands in real containers: ExecSync's output, exit code,
// identity, timeout and errors, and Exec's stdin, terminal and cancellation.
// At the end no exec process, goroutine or FIFO may be left.
func TestExec(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and real containerd and runc (not -short)")
	}
	n := startExecNode(t)
	// Warm up, so that the connections' goroutines are in the baseline.
	n.execSync(t, n.app, "true")
	goroutines, fifos := runtime.NumGoroutine(), n.fifos()
	t.Run("ExecSync", n.testExecSync)
	t.Run("identity", n.testIdentity)
	t.Run("timeout", n.testTimeout)
	t.Run("output held open", n.testOutputHeldOpen)
	t.Run("cancel", n.testCancel)
	t.Run("stdin", n.testStdin)
	t.Run("tty", n.testTTY)
	t.Run("concurrent", n.testConcurrent)
	t.Run("not running", n.testNotRunning)
	t.Run("stop", n.testStop)
	n.checkNoLeaks(t, goroutines, fifos)
}

// execNode is a containerd of its own (nodetest names) with a pod whose
// "app" container runs busybox `sleep 3600` with FOO=bar in /tmp, made by
// the Runtime as the agent makes it, and a plain containerd container
// "nobody" running as uid 65534 (ContainerSpec has no user field).
type execNode struct {
	rt                   *cri.Runtime
	client               *containerd.Client
	node                 nodetest.Node
	dir, stateDir        string
	pod                  cri.PodRef
	sandbox, app, nobody string
}

func startExecNode(t testing.TB) *execNode {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	n := &execNode{node: nodetest.New(dir), dir: dir, stateDir: filepath.Join(dir, "state"),
		pod: cri.PodRef{UID: uuid.NewString(), Namespace: "test", Name: "exec"}}
	n.node.Namespace = "skiff-exec-" + cri.NewID()[:6]
	d, err := supervisor.Start(ctx, supervisor.Config{Dir: filepath.Join(dir, "agent", "containerd")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.cleanup(t) })
	n.rt, err = cri.Connect(ctx, cri.Config{Address: d.Address(), Namespace: n.node.Namespace,
		StateDir: n.stateDir, PodLogDir: filepath.Join(dir, "logs"), CgroupRoot: n.node.CgroupRoot})
	if err != nil {
		t.Fatal(err)
	}
	n.client, err = containerd.New(d.Address(), containerd.WithDefaultNamespace(n.node.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	for ref, build := range map[string]func(string) ([]byte, error){execPause: images.Pause, execBusybox: images.Busybox} {
		tar, err := build(ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.rt.Import(ctx, bytes.NewReader(tar)); err != nil {
			t.Fatal(err)
		}
	}
	n.sandbox = cri.NewID()
	if err := n.rt.RunSandbox(ctx, cri.SandboxSpec{Pod: n.pod, ID: n.sandbox, Image: execPause, Hostname: "exec"}); err != nil {
		t.Fatal(err)
	}
	n.app = n.startContainer(t, cri.ContainerSpec{Name: "app", Command: []string{"sleep", "3600"},
		Env: []string{"FOO=bar"}, WorkingDir: "/tmp"})
	n.startNobody(t)
	return n
}

// startContainer creates and starts a busybox container in the pod.
func (n *execNode) startContainer(t testing.TB, spec cri.ContainerSpec) string {
	t.Helper()
	id := n.createContainer(t, spec)
	if err := n.rt.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

func (n *execNode) createContainer(t testing.TB, spec cri.ContainerSpec) string {
	t.Helper()
	spec.Pod, spec.SandboxID, spec.Image, spec.Hostname = n.pod, n.sandbox, execBusybox, "exec"
	id, err := n.rt.CreateContainer(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// startNobody runs busybox `sleep 3600` as nobody in a plain containerd
// container, with its cgroup under the node's and runc's state in the test dir.
func (n *execNode) startNobody(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	img, err := n.client.GetImage(ctx, execBusybox)
	if err != nil {
		t.Fatal(err)
	}
	id := "nobody-" + cri.NewID()[:8]
	c, err := n.client.NewContainer(ctx, id, containerd.WithImage(img), containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(oci.WithDefaultSpec(), oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600"),
			oci.WithUserID(65534), oci.WithCgroup(n.node.CgroupRoot+"/"+id)),
		containerd.WithRuntime("io.containerd.runc.v2", &options.Options{Root: filepath.Join(n.dir, "runc-plain")}))
	if err != nil {
		t.Fatal(err)
	}
	n.nobody = id
	task, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// cleanup removes the containers and the pod, then leaves the machine as
// nodetest finds it (containerd stopped, cgroups removed).
func (n *execNode) cleanup(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n.client != nil {
		if c, err := n.client.LoadContainer(ctx, n.nobody); err == nil {
			if task, err := c.Task(ctx, nil); err == nil {
				if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil {
					t.Errorf("delete nobody's task: %v", err)
				}
			}
			if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil {
				t.Errorf("delete nobody: %v", err)
			}
		}
		n.client.Close()
	}
	if n.rt != nil {
		for _, id := range []string{n.app, n.sandbox} {
			if id == "" {
				continue
			}
			if err := errors.Join(stopErr(n.rt.StopContainer(ctx, id, 0)), n.rt.RemoveContainer(ctx, id)); err != nil {
				t.Error(err)
			}
		}
		if err := n.rt.RemovePod(ctx, n.pod); err != nil {
			t.Error(err)
		}
		n.rt.Close()
	}
	n.node.Clean(t)
}

func (n *execNode) execSync(t testing.TB, id string, cmd ...string) string {
	t.Helper()
	stdout, stderr, code, err := n.rt.ExecSync(context.Background(), id, cmd, 30*time.Second)
	if err != nil || code != 0 {
		t.Fatalf("%q: exit %d, %v; stderr %q", cmd, code, err, stderr)
	}
	return string(stdout)
}

func (n *execNode) testExecSync(t *testing.T) {
	tests := []struct {
		name           string
		cmd            []string
		stdout, stderr string
		stdoutLen      int // checked instead of stdout when set
		code           int
		wantErr        bool
	}{
		{name: "output and exit code", cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}, stdout: "out\n", stderr: "err\n", code: 7},
		{name: "container's env", cmd: []string{"sh", "-c", "echo $FOO"}, stdout: "bar\n"},
		{name: "container's working dir", cmd: []string{"pwd"}, stdout: "/tmp\n"},
		{name: "output capped at 16 MiB", cmd: []string{"head", "-c", "20000000", "/dev/zero"}, stdoutLen: 16 << 20},
		{name: "no such command", cmd: []string{"no-such-command"}, code: -1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code, err := n.rt.ExecSync(context.Background(), n.app, tt.cmd, 30*time.Second)
			if (err != nil) != tt.wantErr || code != tt.code {
				t.Fatalf("exit %d, %v; want %d (error: %v)", code, err, tt.code, tt.wantErr)
			}
			if tt.stdoutLen > 0 && len(stdout) != tt.stdoutLen || tt.stdoutLen == 0 && string(stdout) != tt.stdout {
				t.Errorf("stdout %q (%d bytes), want %q", shorten(stdout), len(stdout), tt.stdout)
			}
			if string(stderr) != tt.stderr {
				t.Errorf("stderr %q, want %q", stderr, tt.stderr)
			}
			n.checkOnlyMainProcess(t, n.app)
		})
	}
}

func shorten(b []byte) []byte { return b[:min(len(b), 100)] }

// testIdentity: the command runs with the credentials, capabilities and
// seccomp state of the container's own process (its PID 1).
func (n *execNode) testIdentity(t *testing.T) {
	const fields = `^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp):`
	for _, c := range []struct{ name, id, uid string }{{"app", n.app, "0\n"}, {"nobody", n.nobody, "65534\n"}} {
		t.Run(c.name, func(t *testing.T) {
			if got := n.execSync(t, c.id, "id", "-u"); got != c.uid {
				t.Errorf("uid %q, want %q", got, c.uid)
			}
			want := n.execSync(t, c.id, "grep", "-E", fields, "/proc/1/status")
			if got := n.execSync(t, c.id, "grep", "-E", fields, "/proc/self/status"); got != want || want == "" {
				t.Errorf("exec process:\n%s\ncontainer process:\n%s", got, want)
			}
		})
	}
}

func (n *execNode) testTimeout(t *testing.T) {
	start := time.Now()
	_, _, code, err := n.rt.ExecSync(context.Background(), n.app, []string{"sleep", "30"}, time.Second)
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("returned after %s", elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `command "sleep 30" timed out`) || code != -1 {
		t.Errorf("exit %d, %v; want -1 and a timeout", code, err)
	}
	n.checkOnlyMainProcess(t, n.app)
}

// testOutputHeldOpen: a process the command leaves in the background keeps
// its output open; ExecSync gives up waiting for it, keeping the exit code.
func (n *execNode) testOutputHeldOpen(t *testing.T) {
	start := time.Now()
	stdout, _, code, err := n.rt.ExecSync(context.Background(), n.nobody, []string{"sh", "-c", "sleep 10 & echo hi"}, 30*time.Second)
	if elapsed := time.Since(start); elapsed > 8*time.Second {
		t.Errorf("returned after %s", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "output still open") || code != 0 || string(stdout) != "hi\n" {
		t.Errorf("exit %d, %v, stdout %q; want 0, hi and an error", code, err, stdout)
	}
}

func (n *execNode) testCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	code, err := n.rt.Exec(ctx, n.app, cri.ExecOptions{Cmd: []string{"sleep", "30"}})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("returned after %s", elapsed)
	}
	if !errors.Is(err, context.Canceled) || code != -1 {
		t.Errorf("exit %d, %v; want -1 and context.Canceled", code, err)
	}
	n.checkOnlyMainProcess(t, n.app)
}

// testStdin: the command reads what is written and sees the end of input.
func (n *execNode) testStdin(t *testing.T) {
	const input = "hello\nworld\n"
	tests := []struct {
		name  string
		stdin func() io.Reader
	}{
		{name: "reader that ends", stdin: func() io.Reader { return strings.NewReader(input) }},
		{name: "pipe closed after writing", stdin: func() io.Reader {
			r, w := io.Pipe()
			go func() { _, _ = io.WriteString(w, input); _ = w.Close() }()
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code, err := n.rt.Exec(ctx, n.app, cri.ExecOptions{Cmd: []string{"sh", "-c", "cat; echo done >&2; exit 3"},
				Stdin: tt.stdin(), Stdout: &stdout, Stderr: &stderr})
			if err != nil || code != 3 || stdout.String() != input || stderr.String() != "done\n" {
				t.Errorf("exit %d, %v, stdout %q, stderr %q; want 3, %q, %q", code, err, &stdout, &stderr, input, "done\n")
			}
			n.checkOnlyMainProcess(t, n.app)
		})
	}
}

// testTTY: the command gets a terminal, with stderr merged into stdout and
// the sizes sent on Resize.
func (n *execNode) testTTY(t *testing.T) {
	t.Run("no stdin", func(t *testing.T) {
		var stdout bytes.Buffer
		code, err := n.rt.Exec(context.Background(), n.app, cri.ExecOptions{Cmd: []string{"sh", "-c", "tty; echo merged >&2"},
			Stdout: &stdout, TTY: true})
		if err != nil || code != 0 || !strings.Contains(stdout.String(), "/dev/pts/") || !strings.Contains(stdout.String(), "merged") {
			t.Errorf("exit %d, %v, output %q", code, err, &stdout)
		}
	})
	t.Run("stdin and resize", n.testResize)
}

func (n *execNode) testResize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdin, input := io.Pipe()
	defer input.Close() // Exec does not wait for stdin; closing it ends the copying
	resize := make(chan cri.TermSize)
	var stdout bytes.Buffer
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := n.rt.Exec(ctx, n.app, cri.ExecOptions{Cmd: []string{"sh", "-c", "tty; read line; stty size"},
			Stdin: stdin, Stdout: &stdout, TTY: true, Resize: resize})
		done <- result{code, err}
	}()
	// Exec applies a size before it takes the next, so after the second
	// send the first is in place.
	for range 2 {
		select {
		case resize <- cri.TermSize{Width: 100, Height: 30}:
		case r := <-done:
			t.Fatalf("exec ended early: exit %d, %v, output %q", r.code, r.err, &stdout)
		}
	}
	if _, err := io.WriteString(input, "\n"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.code != 0 || !strings.Contains(stdout.String(), "/dev/pts/") || !strings.Contains(stdout.String(), "30 100") {
		t.Errorf("exit %d, %v, output %q; want a pts and size 30 100", r.code, r.err, &stdout)
	}
}

func (n *execNode) testConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			stdout, _, code, err := n.rt.ExecSync(context.Background(), n.app, []string{"echo", fmt.Sprint(i)}, 30*time.Second)
			if err != nil || code != 0 || string(stdout) != fmt.Sprintf("%d\n", i) {
				t.Errorf("exec %d: exit %d, %v, stdout %q", i, code, err, stdout)
			}
		})
	}
	wg.Wait()
}

// testStop: StopContainer says how a container ended. `sleep` as PID 1
// ignores SIGTERM and is killed once its grace runs out; a shell that
// traps SIGTERM exits on it; a container stopped already was not running.
func (n *execNode) testStop(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		cmd  []string
		want cri.Stop
	}{
		{"ignores", []string{"sleep", "3600"}, cri.Killed},
		{"traps", []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}, cri.Terminated},
	} {
		id := n.startContainer(t, cri.ContainerSpec{Name: c.name, Command: c.cmd})
		t.Cleanup(func() { _ = n.rt.RemoveContainer(ctx, id) })
		if c.want == cri.Terminated {
			n.waitForTrap(t, id)
		}
		if how, err := n.rt.StopContainer(ctx, id, 500*time.Millisecond); how != c.want || err != nil {
			t.Errorf("%s: stop says %v, %v; want %v", c.name, how, err, c.want)
		}
		if how, err := n.rt.StopContainer(ctx, id, 0); how != cri.NotRunning || err != nil {
			t.Errorf("%s stopped again: %v, %v; want NotRunning", c.name, how, err)
		}
	}
}

// waitForTrap waits until the container's PID 1 catches SIGTERM (bit 15
// of SigCgt in /proc/1/status), for at most 10 s.
func (n *execNode) waitForTrap(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, line := range strings.Split(n.execSync(t, id, "cat", "/proc/1/status"), "\n") {
			mask, ok := strings.CutPrefix(line, "SigCgt:")
			if bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); ok && err == nil && bits&(1<<14) != 0 {
				return
			}
		}
	}
	t.Fatalf("%s's shell did not trap SIGTERM in 10 s", id)
}

// testNotRunning walks a container through its life, exec'ing at each step.
func (n *execNode) testNotRunning(t *testing.T) {
	ctx := context.Background()
	id := n.createContainer(t, cri.ContainerSpec{Name: "idle", Command: []string{"sleep", "3600"}})
	t.Cleanup(func() { _ = n.rt.RemoveContainer(ctx, id) })
	steps := []struct {
		name string
		do   func() error
		want func(error) bool
	}{
		{"created", nil, errdefs.IsFailedPrecondition},
		{"running", func() error { return n.rt.StartContainer(ctx, id) }, func(err error) bool { return err == nil }},
		{"exited, not reaped", func() error { return n.killTask(ctx, id) }, errdefs.IsFailedPrecondition},
		{"reaped", func() error { return stopErr(n.rt.StopContainer(ctx, id, 0)) }, errdefs.IsFailedPrecondition},
		{"removed", func() error { return n.rt.RemoveContainer(ctx, id) }, errdefs.IsNotFound},
	}
	for _, step := range steps {
		if step.do != nil {
			if err := step.do(); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		_, _, _, err := n.rt.ExecSync(ctx, id, []string{"true"}, 10*time.Second)
		if !step.want(err) {
			t.Errorf("%s: exec gave %v", step.name, err)
		}
		t.Logf("%s: %v", step.name, err)
	}
}

// killTask kills a container's task and waits for it to exit, without
// deleting it (as a crash leaves it until the agent reaps it).
func (n *execNode) killTask(ctx context.Context, id string) error {
	c, err := n.client.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return err
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return err
	}
	if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
		return err
	}
	<-exited
	return nil
}

// checkOnlyMainProcess fails the test if anything but the container's own
// process is left in it (an exec process that was not killed).
func (n *execNode) checkOnlyMainProcess(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	c, err := n.client.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := task.Pids(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 {
		t.Errorf("processes in the container: %v, want only its own", pids)
	}
}

// fifos lists the runtime's FIFO directory.
func (n *execNode) fifos() []string {
	var paths []string
	_ = filepath.WalkDir(filepath.Join(n.stateDir, "fifo"), func(path string, _ fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, path)
		}
		return nil
	})
	return paths
}

// checkNoLeaks waits (briefly) for the goroutine count and the FIFO
// directory to be back where they were.
func (n *execNode) checkNoLeaks(t *testing.T, goroutines int, fifos []string) {
	t.Helper()
	const slack = 3
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		now, left := runtime.NumGoroutine(), n.fifos()
		if now <= goroutines+slack && slices.Equal(left, fifos) {
			t.Logf("goroutines: %d before, %d after; %d FIFO dir entries", goroutines, now, len(left))
			return
		}
		select {
		case <-tick.C:
			continue
		case <-deadline:
		}
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after; FIFOs before %q, after %q\n%s",
			goroutines, now, fifos, left, buf[:runtime.Stack(buf, true)])
		return
	}
}
