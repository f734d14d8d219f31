package main

import (
	"context"
	"log/slog"

	"github.com/coreos/go-systemd/v22/daemon"
)

// readyNotifier returns a channel whose closing tells systemd that the
// service is ready (READY=1 for a Type=notify unit); STOPPING=1 follows
// when ctx ends. Outside systemd (no NOTIFY_SOCKET) nothing is sent.
func readyNotifier(ctx context.Context, service string) chan<- struct{} {
	ready := make(chan struct{})
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		notify(service, daemon.SdNotifyReady)
		<-ctx.Done()
		notify(service, daemon.SdNotifyStopping)
	}()
	return ready
}

func notify(service, state string) {
	sent, err := daemon.SdNotify(false, state)
	switch {
	case err != nil:
		slog.Warn("tell systemd", "service", service, "state", state, "err", err)
	case sent:
		slog.Info("told systemd", "service", service, "state", state)
	}
}
