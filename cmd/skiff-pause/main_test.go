package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/version"
)

// TestReap checks that reap collects an exited child without blocking.
func TestReap(t *testing.T) {
	if n := reap(); n != 0 {
		t.Fatalf("reap with no exited child = %d", n)
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for reaped := 0; reaped == 0; reaped = reap() {
		if time.Now().After(deadline) {
			t.Fatal("child not reaped within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("child %d still exists after reap: kill 0 = %v", cmd.Process.Pid, err)
	}
}

// pauseBinary writes the built skiff-pause to a temporary file.
func pauseBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds skiff-pause")
	}
	bin, err := images.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "skiff-pause")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(pauseBinary(t), "-v").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "skiff-pause " + version.Version + "\n"; string(out) != want {
		t.Errorf("-v printed %q, want %q", out, want)
	}
	if err := exec.Command(pauseBinary(t), "-x").Run(); err == nil {
		t.Error("unknown flag accepted")
	}
}

func TestExitsZeroOnSignal(t *testing.T) {
	bin := pauseBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := start(t, exec.Command(bin))
			cmd.Process.Signal(sig)
			waitExit(t, cmd)
		})
	}
}

// TestReapsOrphansAsPID1 runs skiff-pause as PID 1 of a new PID namespace,
// orphans a process inside it and checks that its zombie is reaped.
func TestReapsOrphansAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter")
	}
	if _, err := os.Stat(images.BusyboxPath); err != nil {
		t.Skip("no busybox")
	}
	cmd := exec.Command(pauseBinary(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	start(t, cmd)
	pid := cmd.Process.Pid

	// sh starts sleep in the background and exits: sleep is orphaned to
	// PID 1. Killing it then leaves a zombie that only PID 1 can reap.
	bb := images.BusyboxPath
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	orphan := exec.CommandContext(ctx, nsenter, "-t", strconv.Itoa(pid), "-p", "--",
		bb, "sh", "-c", bb+" sleep 600 </dev/null >/dev/null 2>&1 & exit 0")
	orphan.WaitDelay = time.Second // never wait for output from a stray holder of the pipe
	out, err := orphan.CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	kids := children(t, pid)
	if len(kids) != 1 {
		t.Fatalf("skiff-pause has children %v, want the orphaned sleep", kids)
	}
	if err := syscall.Kill(kids[0].pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(children(t, pid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("children not reaped: %v", children(t, pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd)
}

// start starts cmd and waits until it has called signal.Notify, so that a
// signal sent next is handled. (Before that, the Go runtime's own handler
// would make SIGTERM fatal, or, for a PID 1, have it ignored.)
func start(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for !notifies(t, cmd.Process.Pid, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD) {
		if time.Now().After(deadline) {
			t.Fatal("skiff-pause has not called signal.Notify after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The signal thread appears inside signal.Notify, just before it enables
	// the signals; on a loaded machine that gap can be long enough for a
	// signal sent at once to find them not enabled yet.
	time.Sleep(200 * time.Millisecond)
	return cmd
}

func waitExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("skiff-pause exited with %v, want status 0", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("skiff-pause did not exit within 5s")
	}
}

// notifies reports whether Go process pid has called signal.Notify for
// sigs. The runtime handles every signal from the start (SigCgt tells
// nothing); os/signal delivers notified signals on a thread of its own that
// blocks all others, SIGUSR1 among them, and unblocks each notified signal
// before Notify returns (runtime.ensureSigM).
func notifies(t *testing.T, pid int, sigs ...syscall.Signal) bool {
	t.Helper()
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		hex, ok := statusField("/proc/"+strconv.Itoa(pid)+"/task/"+task.Name()+"/status", "SigBlk")
		if !ok {
			continue
		}
		blocked, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			t.Fatalf("SigBlk %q: %v", hex, err)
		}
		bit := func(s syscall.Signal) uint64 { return 1 << (uint(s) - 1) }
		if blocked&bit(syscall.SIGUSR1) == 0 {
			continue
		}
		unblocked := true
		for _, s := range sigs {
			unblocked = unblocked && blocked&bit(s) == 0
		}
		if unblocked {
			return true
		}
	}
	return false
}

type child struct {
	pid   int
	state string
}

// children lists the processes whose parent is pid.
func children(t *testing.T, pid int) []child {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []child
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		status := "/proc/" + d.Name() + "/status"
		if ppid, _ := statusField(status, "PPid"); ppid == strconv.Itoa(pid) {
			state, _ := statusField(status, "State")
			kids = append(kids, child{p, state})
		}
	}
	return kids
}

// statusField returns a field of a /proc/.../status file.
func statusField(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
