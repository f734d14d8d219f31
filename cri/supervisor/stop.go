package supervisor

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

const (
	stopTimeout  = 10 * time.Second // SIGTERM until SIGKILL
	killTimeout  = 10 * time.Second // SIGKILL until giving up
	goneInterval = 50 * time.Millisecond
)

// Stop terminates the daemon (SIGTERM, then SIGKILL after a timeout or when
// ctx ends) and waits for it; Supervise then returns instead of restarting.
// For tests and explicit teardown only: in normal operation the daemon
// outlives the agent. Containers' shims keep running either way.
func (d *Daemon) Stop(ctx context.Context) error {
	d.op.Lock()
	defer d.op.Unlock()
	d.mu.Lock()
	d.stopped = true
	pid, exited := d.pid, d.exited
	d.mu.Unlock()

	if err := terminate(ctx, pid, d.configPath, exited); err != nil {
		return fmt.Errorf("stop containerd: %w", err)
	}
	if p, _ := readPid(d.pidPath); p == pid {
		os.Remove(d.pidPath)
	}
	return nil
}

// terminate stops pid with SIGTERM, then SIGKILL after stopTimeout or when
// ctx ends, and waits until it is gone (see signalAndWait).
func terminate(ctx context.Context, pid int, configPath string, exited <-chan struct{}) error {
	err := signalAndWait(ctx, pid, configPath, exited, syscall.SIGTERM, stopTimeout)
	if err != nil {
		err = signalAndWait(context.WithoutCancel(ctx), pid, configPath, exited, syscall.SIGKILL, killTimeout)
	}
	return err
}

// signalAndWait sends sig to pid if it still runs configPath's daemon and
// waits until it is gone: exited closes (a child of this process, reaped),
// or pid no longer runs the config (any other). It gives up after timeout
// or when ctx ends.
func signalAndWait(ctx context.Context, pid int, configPath string, exited <-chan struct{}, sig syscall.Signal, timeout time.Duration) error {
	gone := func() bool {
		if exited == nil {
			return !runsConfig(pid, configPath)
		}
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	if gone() {
		return nil
	}
	if runsConfig(pid, configPath) {
		if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("signal containerd %d: %w", pid, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(goneInterval)
	defer tick.Stop()
	for !gone() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd %d still running after %s: %w", pid, sig, ctx.Err())
		case <-exited:
		case <-tick.C:
		}
	}
	return nil
}
