package supervisor

import (
	"context"
	"time"
)

// Restart back-off: the first restart waits minDelay, each quick failure
// after it doubles the wait up to maxDelay, and a daemon that stayed up
// for stableUptime starts the sequence again.
const (
	minDelay     = 500 * time.Millisecond
	maxDelay     = 10 * time.Second
	stableUptime = time.Minute
	pollInterval = 500 * time.Millisecond // liveness of an adopted daemon
)

// Supervise blocks until ctx is done, restarting the daemon whenever it
// dies (adopting instead if a daemon for the config is running again). It
// never stops the daemon: a restart under way when ctx ends completes. It
// returns early after Stop. Call it once per Daemon.
func (d *Daemon) Supervise(ctx context.Context) {
	log := d.cfg.Logger.With("component", "containerd", "address", d.cfg.Address)
	var delay time.Duration
	for {
		up, pid := time.Now(), d.Pid()
		if !d.waitExit(ctx) || d.isStopped() {
			return
		}
		delay = nextDelay(delay, time.Since(up))
		log.Warn("containerd exited; restarting", "pid", pid, "delay", delay)
		for {
			if !sleep(ctx, delay) {
				return
			}
			err := d.ensure(context.WithoutCancel(ctx))
			if err == nil {
				log.Info("containerd restarted", "pid", d.Pid(), "adopted", d.Adopted())
				break
			}
			if d.isStopped() {
				return
			}
			delay = nextDelay(delay, 0)
			log.Error("restart containerd", "err", err, "delay", delay)
		}
	}
}

// nextDelay is the wait before the next restart, after waiting prev before
// the last one (0 if none) and an uptime of the daemon since then.
func nextDelay(prev, uptime time.Duration) time.Duration {
	if prev == 0 || uptime >= stableUptime {
		return minDelay
	}
	return min(2*prev, maxDelay)
}

// waitExit waits until the daemon is gone (true) or ctx ends (false).
func (d *Daemon) waitExit(ctx context.Context) bool {
	d.mu.Lock()
	pid, exited := d.pid, d.exited
	d.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
			return true
		case <-ctx.Done():
			return false
		}
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for runsConfig(pid, d.configPath) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
