// Package install installs and removes skiff as a systemd service: the
// binary, /etc/skiff/config.yaml, the unit of deploy/systemd, enabled and
// started. What the services made on the node (pods, network, containerd)
// is the agent's to tear down; uninstall runs what it is given for that.
package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/skiff-lab/skiff/deploy"
)

// Roles a machine is installed as.
const (
	Server = "server"
	Agent  = "agent"
)

// Paths are where an installation lives.
type Paths struct {
	Binary  string // the skiff binary the units run
	Kubectl string // a symlink to it, made if nothing is there
	Config  string // the settings of skiff server or agent
	Units   string // where systemd units go
}

// DefaultPaths are the paths the units in deploy/systemd name.
var DefaultPaths = Paths{
	Binary:  "/usr/local/bin/skiff",
	Kubectl: "/usr/local/bin/kubectl",
	Config:  "/etc/skiff/config.yaml",
	Units:   "/etc/systemd/system",
}

// Systemd is what install needs of systemd.
type Systemd interface {
	Reload(ctx context.Context) error
	// Start enables unit and (re)starts it, returning once systemd says
	// it started (a Type=notify unit: once it sent READY=1).
	Start(ctx context.Context, unit string) error
	// Remove stops and disables unit; a unit that is not there is done.
	Remove(ctx context.Context, unit string) error
}

// Machine is the host install works on: whether it can, and its systemd.
type Machine struct {
	Paths   Paths
	Systemd Systemd
	Out     io.Writer
	// Root and Booted report whether the process is root and the machine
	// runs systemd; Check refuses otherwise.
	Root, Booted bool
}

// Check refuses, saying why and what to do instead, a machine install
// cannot work on.
func (m Machine) Check(command, instead string) error {
	if !m.Root {
		return fmt.Errorf("%s must run as root (try: sudo skiff %s)", command, command)
	}
	if !m.Booted {
		return fmt.Errorf("%s needs systemd, which is not running here (no /run/systemd/system): %s", command, instead)
	}
	return nil
}

// Install installs role with settings (flag name → value, as in the
// config file), replacing an earlier installation's settings: the binary
// at self is copied to Paths.Binary, settings written, the unit written,
// enabled and (re)started. ready then waits until the service is useful.
func (m Machine) Install(ctx context.Context, role, self string, settings map[string]any, ready func(context.Context) error) error {
	if err := m.Check("install "+role, "run `skiff "+role+"` directly under your own supervisor"); err != nil {
		return err
	}
	unit, data, err := deploy.Unit(role)
	if err != nil {
		return err
	}
	if err := m.installBinary(self); err != nil {
		return err
	}
	if err := writeSettings(m.Paths.Config, settings); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(m.Paths.Units, unit), data, 0o644); err != nil {
		return err
	}
	if err := m.Systemd.Reload(ctx); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", err)
	}
	fmt.Fprintf(m.Out, "starting %s (journalctl -u %s to follow it)\n", unit, unit)
	if err := m.Systemd.Start(ctx, unit); err != nil {
		return fmt.Errorf("start %s: %w (see journalctl -u %s)", unit, err, unit)
	}
	return ready(ctx)
}

// installBinary copies self to Paths.Binary (unless it is that file) and
// links Paths.Kubectl to it when nothing is there.
func (m Machine) installBinary(self string) error {
	if same, err := sameFile(self, m.Paths.Binary); err != nil {
		return err
	} else if !same {
		data, err := os.ReadFile(self)
		if err != nil {
			return fmt.Errorf("read the running skiff: %w", err)
		}
		if err := writeFile(m.Paths.Binary, data, 0o755); err != nil {
			return err
		}
	}
	if _, err := os.Lstat(m.Paths.Kubectl); errors.Is(err, fs.ErrNotExist) {
		return os.Symlink(m.Paths.Binary, m.Paths.Kubectl)
	}
	return nil
}

func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && os.SameFile(fa, fb), err
}

// writeSettings writes the config file, readable by root alone: it may
// hold a join token.
func writeSettings(path string, settings map[string]any) error {
	data, err := yaml.Marshal(settings)
	if err != nil {
		return err
	}
	header := "# Written by skiff install; every flag of skiff server / skiff agent may be set here.\n"
	return writeFile(path, append([]byte(header), data...), 0o600)
}

// writeFile replaces path with data atomically (a temporary file renamed).
func writeFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err = errors.Join(err, tmp.Chmod(mode), tmp.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
