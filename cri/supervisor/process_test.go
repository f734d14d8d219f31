package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as helper processes, chosen by these variables.
const (
	helperEnv    = "SKIFF_SUPERVISOR_TEST_HELPER" // "start"
	helperDirEnv = "SKIFF_SUPERVISOR_TEST_DIR"    // Config.Dir for "start"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "start" {
		runStarter()
	}
	os.Exit(m.Run())
}

// fakeDaemon is a stand-in daemon: "/bin/sh <script> --config <path>",
// a script of the machine's own shell, so that it also runs when the tests
// are run for another architecture under qemu-user.
const fakeDaemon = "#!/bin/sh\ntrap 'exit 0' TERM\nwhile :; do sleep 1; done\n"

// startFake starts a process whose command line looks like a daemon's for configPath.
func startFake(t *testing.T, configPath string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "containerd")
	if err := os.WriteFile(script, []byte(fakeDaemon), 0o755); err != nil {
		t.Fatal(err)
	}
	argv := args(script, configPath)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	// Its command line reads empty for a moment while it execs.
	deadline := time.Now().Add(10 * time.Second)
	for !runsConfig(cmd.Process.Pid, configPath) {
		if time.Now().After(deadline) {
			t.Fatal("stand-in daemon not running after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	return cmd, exited
}

func TestFindRunning(t *testing.T) {
	dir := t.TempDir()
	configPath := filepath.Join(dir, configFile)
	pidPath := filepath.Join(dir, pidFile)
	if pid := findRunning(pidPath, configPath); pid != 0 {
		t.Fatalf("found %d before any start", pid)
	}
	cmd, _ := startFake(t, configPath)
	pid := cmd.Process.Pid
	if !runsConfig(pid, configPath) || runsConfig(pid, configPath+".other") {
		t.Error("runsConfig does not tell the config apart")
	}
	if got := findRunning(pidPath, configPath); got != pid {
		t.Errorf("without a pid file: found %d, want %d", got, pid)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := findRunning(pidPath, configPath); got != pid {
		t.Errorf("with a stale pid file: found %d, want %d", got, pid)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := findRunning(pidPath, configPath); got != pid {
		t.Errorf("with the pid file: found %d, want %d", got, pid)
	}
}

func TestSignalAndWait(t *testing.T) {
	configPath := filepath.Join(t.TempDir(), configFile)
	tests := []struct {
		name  string
		child bool // wait on the exited channel rather than on /proc
		sig   syscall.Signal
	}{
		{"child, SIGTERM", true, syscall.SIGTERM},
		{"not a child, SIGKILL", false, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, exited := startFake(t, configPath)
			var wait chan struct{}
			if tt.child {
				wait = exited
			}
			if err := signalAndWait(t.Context(), cmd.Process.Pid, configPath, wait, tt.sig, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if runsConfig(cmd.Process.Pid, configPath) {
				t.Error("process still runs after signalAndWait")
			}
			// Gone already: a second call does nothing.
			if err := signalAndWait(t.Context(), cmd.Process.Pid, configPath, wait, tt.sig, time.Second); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSignalAndWaitTimeout(t *testing.T) {
	configPath := filepath.Join(t.TempDir(), configFile)
	cmd, _ := startFake(t, configPath)
	// SIGCONT does not end it: signalAndWait must give up.
	err := signalAndWait(t.Context(), cmd.Process.Pid, configPath, nil, syscall.SIGCONT, 200*time.Millisecond)
	if err == nil {
		t.Error("signalAndWait succeeded on a process that does not exit")
	}
}
