package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skiff-lab/skiff/deploy"
)

// Uninstall stops and removes both units, runs teardown (what the services
// left on the node), removes the binary and the kubectl link to it, and
// with purge the directories in state (data dir, /etc/skiff, logs).
// Running it again does nothing more.
func (m Machine) Uninstall(ctx context.Context, teardown func(context.Context) error, purge bool, state []string) error {
	if err := m.Check("uninstall", "stop skiff yourself, then `skiff agent --cleanup` removes its rules"); err != nil {
		return err
	}
	var errs []error
	for _, role := range []string{Agent, Server} {
		unit, _, _ := deploy.Unit(role)
		errs = append(errs, m.removeUnit(ctx, unit))
	}
	errs = append(errs, m.Systemd.Reload(ctx))
	if err := teardown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("tear down the node: %w", err))
	}
	if target, err := os.Readlink(m.Paths.Kubectl); err == nil && target == m.Paths.Binary {
		errs = append(errs, m.remove(m.Paths.Kubectl))
	}
	errs = append(errs, m.remove(m.Paths.Binary))
	if purge {
		for _, dir := range state {
			errs = append(errs, m.remove(dir))
		}
	}
	return errors.Join(errs...)
}

func (m Machine) removeUnit(ctx context.Context, unit string) error {
	path := filepath.Join(m.Paths.Units, unit)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fmt.Fprintf(m.Out, "stopping and removing %s\n", unit)
	if err := m.Systemd.Remove(ctx, unit); err != nil {
		return fmt.Errorf("stop %s: %w", unit, err)
	}
	return os.Remove(path)
}

// remove removes path and what is under it, saying so when it was there.
func (m Machine) remove(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fmt.Fprintf(m.Out, "removing %s\n", path)
	return os.RemoveAll(path)
}
