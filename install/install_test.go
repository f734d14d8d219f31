package install

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type fakeSystemd struct {
	calls []string
	fail  error
}

func (f *fakeSystemd) Reload(context.Context) error { f.calls = append(f.calls, "reload"); return nil }
func (f *fakeSystemd) Start(_ context.Context, unit string) error {
	f.calls = append(f.calls, "start "+unit)
	return f.fail
}
func (f *fakeSystemd) Remove(_ context.Context, unit string) error {
	f.calls = append(f.calls, "remove "+unit)
	return nil
}

func testMachine(t *testing.T) (Machine, *fakeSystemd, *bytes.Buffer) {
	dir := t.TempDir()
	sd, out := &fakeSystemd{}, &bytes.Buffer{}
	return Machine{Paths: Paths{
		Binary: filepath.Join(dir, "bin", "skiff"), Kubectl: filepath.Join(dir, "bin", "kubectl"),
		Config: filepath.Join(dir, "etc", "config.yaml"), Units: filepath.Join(dir, "units"),
	}, Systemd: sd, Out: out, Root: true, Booted: true}, sd, out
}

func selfBinary(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "skiff")
	if err := os.WriteFile(path, []byte("#!skiff"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInstallWritesAndStarts(t *testing.T) {
	m, sd, _ := testMachine(t)
	waited := false
	settings := map[string]any{"server": "https://10.0.0.1:6443", "token": "K10abc::node:secret", "node-labels": map[string]string{"zone": "a"}}
	err := m.Install(context.Background(), Agent, selfBinary(t), settings, func(context.Context) error { waited = true; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sd.calls, "; "); got != "reload; start skiff-agent.service" || !waited {
		t.Errorf("systemd calls %q, waited %v", got, waited)
	}
	if data, _ := os.ReadFile(m.Paths.Binary); string(data) != "#!skiff" {
		t.Errorf("binary %q", data)
	}
	if target, _ := os.Readlink(m.Paths.Kubectl); target != m.Paths.Binary {
		t.Errorf("kubectl links to %q", target)
	}
	unit, _ := os.ReadFile(filepath.Join(m.Paths.Units, "skiff-agent.service"))
	if !bytes.Contains(unit, []byte("ExecStart=/usr/local/bin/skiff agent")) {
		t.Errorf("unit:\n%s", unit)
	}
	info, _ := os.Stat(m.Paths.Config)
	data, _ := os.ReadFile(m.Paths.Config)
	var back map[string]any
	if err := yaml.Unmarshal(data, &back); err != nil || back["token"] != "K10abc::node:secret" || back["node-labels"].(map[string]any)["zone"] != "a" {
		t.Errorf("config %s: %v, %v", data, back, err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v: it holds the join token", info.Mode())
	}
	// Again, with other settings: replaced, binary left alone when it is the installed one.
	if err := m.Install(context.Background(), Agent, m.Paths.Binary, map[string]any{"server": "https://x:6443"}, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(m.Paths.Config); bytes.Contains(data, []byte("token")) {
		t.Errorf("second install kept the first's settings:\n%s", data)
	}
}

func TestInstallRefuses(t *testing.T) {
	m, sd, _ := testMachine(t)
	m.Root = false
	if err := m.Install(context.Background(), Server, selfBinary(t), nil, nil); err == nil || !strings.Contains(err.Error(), "must run as root") {
		t.Errorf("not root: %v", err)
	}
	m.Root, m.Booted = true, false
	if err := m.Uninstall(context.Background(), nil, false, nil); err == nil || !strings.Contains(err.Error(), "needs systemd") {
		t.Errorf("no systemd: %v", err)
	}
	m.Booted = true
	sd.fail = errors.New("systemd job failed")
	err := m.Install(context.Background(), Server, selfBinary(t), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "journalctl -u skiff-server.service") {
		t.Errorf("failed start: %v", err)
	}
}

func TestUninstallIsIdempotent(t *testing.T) {
	m, sd, out := testMachine(t)
	ready := func(context.Context) error { return nil }
	if err := m.Install(context.Background(), Server, selfBinary(t), nil, ready); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	tornDown := 0
	teardown := func(context.Context) error { tornDown++; return nil }
	for range 2 {
		if err := m.Uninstall(context.Background(), teardown, true, []string{data, filepath.Dir(m.Paths.Config)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{m.Paths.Binary, m.Paths.Kubectl, m.Paths.Config, data, filepath.Join(m.Paths.Units, "skiff-server.service")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there", p)
		}
	}
	if n := strings.Count(strings.Join(sd.calls, ";"), "remove skiff-server.service"); n != 1 || tornDown != 2 {
		t.Errorf("calls %q, teardowns %d", sd.calls, tornDown)
	}
	if strings.Count(out.String(), "removing "+data) != 1 {
		t.Errorf("output:\n%s", out)
	}
}
