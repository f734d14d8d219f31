// Package supervisor runs the agent's own containerd: it starts the daemon
// (or adopts one left running by an earlier agent), restarts it when it
// dies, and never stops it unless asked, so that pods outlive the agent.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/continuity"
)

// Bounds on waiting for the daemon.
const (
	startTimeout  = 30 * time.Second // spawn until the socket answers
	adoptTimeout  = 10 * time.Second // a found daemon still starting up
	readyInterval = 100 * time.Millisecond
)

// Daemon is one containerd serving a Config, started or adopted by Start.
// Its methods are safe for concurrent use.
type Daemon struct {
	cfg                          Config // with defaults applied
	configPath, pidPath, logPath string

	op sync.Mutex // serializes spawning and stopping

	mu      sync.Mutex
	pid     int
	exited  chan struct{} // closed when a daemon this process spawned exits; nil if adopted
	adopted bool
	stopped bool
}

// Start makes sure a containerd serving cfg is running. If one started with
// cfg's config file is alive (named by the pid file, or found in /proc),
// serves the config cfg renders to, and answers, it is adopted; one that
// serves another config or does not answer is stopped. Otherwise the config
// is (re)generated and a new daemon is started in its own session, so that it
// outlives the agent (pods survive an agent kill -9). Start returns once the
// socket answers, or fails after a bounded wait or when ctx ends; a daemon
// it spawned that is not ready by then is killed.
func Start(ctx context.Context, cfg Config) (*Daemon, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		cfg:        cfg,
		configPath: filepath.Join(cfg.Dir, configFile),
		pidPath:    filepath.Join(cfg.Dir, pidFile),
		logPath:    filepath.Join(cfg.Dir, logFile),
	}
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("containerd dir: %w", err)
	}
	if err := d.ensure(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Address is the path of the daemon's gRPC socket.
func (d *Daemon) Address() string { return d.cfg.Address }

// Adopted reports whether the daemon was found running (by Start, or by
// Supervise when it restarts) rather than started by this Daemon.
func (d *Daemon) Adopted() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.adopted
}

// Pid is the process ID of the daemon, as of its last (re)start.
func (d *Daemon) Pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pid
}

// ensure adopts the live daemon for the config if there is one that answers,
// and otherwise starts a new one; see Start.
func (d *Daemon) ensure(ctx context.Context) error {
	d.op.Lock()
	defer d.op.Unlock()
	if d.isStopped() {
		return errors.New("containerd supervisor stopped")
	}
	if pid := findRunning(d.pidPath, d.configPath); pid != 0 {
		adopted, err := d.adopt(ctx, pid)
		if adopted || err != nil {
			return err
		}
	}
	return d.spawn(ctx)
}

// adopt takes over the running daemon pid if it serves the current config
// and answers. If not, it stops it (it holds root/'s lock) and returns false
// so that a new one can start.
func (d *Daemon) adopt(ctx context.Context, pid int) (bool, error) {
	current, reason := d.configCurrent(), "config changed"
	if current {
		err := d.waitReady(ctx, pid, nil, adoptTimeout)
		if err == nil {
			d.set(pid, nil, true)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, err
		}
		reason = err.Error()
	}
	d.cfg.Logger.Warn("replacing running containerd", "pid", pid, "reason", reason, "address", d.cfg.Address)
	if err := terminate(ctx, pid, d.configPath, nil); err != nil {
		return false, fmt.Errorf("replace containerd: %w", err)
	}
	return false, nil
}

// configCurrent reports whether config.toml is what cfg renders to.
func (d *Daemon) configCurrent() bool {
	b, err := os.ReadFile(d.configPath)
	return err == nil && string(b) == renderConfig(d.cfg)
}

// spawn writes the config, starts a new daemon, records its pid and waits
// until it answers. On failure the new process is killed.
func (d *Daemon) spawn(ctx context.Context) error {
	cmd, logStart, err := d.startProcess()
	if err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reaps it while this process lives

	pid := cmd.Process.Pid
	err = continuity.AtomicWriteFile(d.pidPath, []byte(strconv.Itoa(pid)+"\n"), 0o644)
	if err == nil {
		err = d.waitReady(ctx, pid, exited, startTimeout)
	}
	if err != nil {
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("start containerd: %w%s", err, d.logSince(logStart))
	}
	d.set(pid, exited, false)
	return nil
}

func (d *Daemon) set(pid int, exited chan struct{}, adopted bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pid, d.exited, d.adopted = pid, exited, adopted
}

// startProcess writes config.toml and starts containerd in a new session
// with its output appended to the log. It returns the log's size before
// the start, to quote what this run wrote if it fails.
func (d *Daemon) startProcess() (*exec.Cmd, int64, error) {
	if err := continuity.AtomicWriteFile(d.configPath, []byte(renderConfig(d.cfg)), 0o644); err != nil {
		return nil, 0, fmt.Errorf("write containerd config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(d.cfg.Address), 0o711); err != nil {
		return nil, 0, fmt.Errorf("containerd socket dir: %w", err)
	}
	log, err := os.OpenFile(d.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, 0, fmt.Errorf("containerd log: %w", err)
	}
	defer log.Close() // the child has its own descriptor
	var logStart int64
	if fi, err := log.Stat(); err == nil {
		logStart = fi.Size()
	}
	argv := args(d.cfg.Binary, d.configPath)
	cmd := &exec.Cmd{
		Path:   argv[0],
		Args:   argv,
		Dir:    "/",
		Env:    daemonEnv(os.Environ()),
		Stdout: log, // an *os.File is handed over as is: no pipe that could break when the agent dies
		Stderr: log,
		// A session of its own: no signal meant for the agent's process group or terminal reaches it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start containerd: %w", err)
	}
	return cmd, logStart, nil
}

// daemonEnv is the agent's environment without systemd's notify socket:
// containerd would otherwise tell the agent's unit it is ready.
func daemonEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "NOTIFY_SOCKET=") })
}

// waitReady waits until pid answers on the socket. It fails when the
// process is gone, after timeout, or when ctx ends. A child of this process
// is gone when exited closes; /proc is not asked about it, as its command
// line reads empty for a moment while it execs.
func (d *Daemon) waitReady(ctx context.Context, pid int, exited <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(readyInterval)
	defer tick.Stop()
	var err error
	for {
		if exited == nil && !runsConfig(pid, d.configPath) {
			return fmt.Errorf("containerd %d exited", pid)
		}
		if err = ping(ctx, d.cfg.Address); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("containerd %d exited", pid)
		case <-ctx.Done():
			return fmt.Errorf("containerd %d not answering on %s: %w (last error: %v)", pid, d.cfg.Address, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// logSince returns what the daemon logged after offset, at most its last
// few lines' worth, for an error message.
func (d *Daemon) logSince(offset int64) string {
	const max = 2048
	b, err := os.ReadFile(d.logPath)
	if err != nil || int64(len(b)) <= offset {
		return ""
	}
	b = b[offset:]
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return "; containerd log ends:\n" + string(b)
}

func (d *Daemon) isStopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}
