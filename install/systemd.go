package install

import (
	"context"
	"fmt"
	"os"

	"github.com/coreos/go-systemd/v22/dbus"
	"github.com/coreos/go-systemd/v22/util"
)

// ThisMachine is the machine skiff runs on, its systemd reached over
// systemd's D-Bus API.
func ThisMachine() Machine {
	return Machine{Paths: DefaultPaths, Systemd: busSystemd{}, Out: os.Stdout,
		Root: os.Geteuid() == 0, Booted: util.IsRunningSystemd()}
}

// busSystemd is systemd over its D-Bus API on its private socket (root
// only; no D-Bus daemon needed).
type busSystemd struct{}

func (busSystemd) with(ctx context.Context, fn func(*dbus.Conn) error) error {
	conn, err := dbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		return fmt.Errorf("connect to systemd: %w", err)
	}
	defer conn.Close()
	return fn(conn)
}

func (s busSystemd) Reload(ctx context.Context) error {
	return s.with(ctx, func(c *dbus.Conn) error { return c.ReloadContext(ctx) })
}

func (s busSystemd) Start(ctx context.Context, unit string) error {
	return s.with(ctx, func(c *dbus.Conn) error {
		if _, _, err := c.EnableUnitFilesContext(ctx, []string{unit}, false, true); err != nil {
			return fmt.Errorf("enable: %w", err)
		}
		return job(ctx, func(ch chan<- string) (int, error) { return c.RestartUnitContext(ctx, unit, "replace", ch) })
	})
}

func (s busSystemd) Remove(ctx context.Context, unit string) error {
	return s.with(ctx, func(c *dbus.Conn) error {
		if err := job(ctx, func(ch chan<- string) (int, error) { return c.StopUnitContext(ctx, unit, "replace", ch) }); err != nil {
			return err
		}
		_, err := c.DisableUnitFilesContext(ctx, []string{unit}, false)
		return err
	})
}

// job runs a systemd job and waits for its result.
func job(ctx context.Context, start func(chan<- string) (int, error)) error {
	ch := make(chan string, 1)
	if _, err := start(ch); err != nil {
		return err
	}
	select {
	case result := <-ch:
		if result != "done" {
			return fmt.Errorf("systemd job %s", result)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
