package cni

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// newTestNetwork returns a Network whose state lives in a temp dir.
func newTestNetwork(t testing.TB, bridge string) (*Network, Config) {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{
		PluginDirs: []string{"/usr/lib/cni"},
		ConfDir:    filepath.Join(dir, "net.d"),
		CacheDir:   filepath.Join(dir, "cache"),
		NetNSDir:   filepath.Join(dir, "netns"),
		Bridge:     bridge,
	}
	return New(cfg), cfg.withDefaults()
}

func TestList(t *testing.T) {
	n, cfg := newTestNetwork(t, "x")
	if ids, err := n.List(); err != nil || ids != nil {
		t.Fatalf("List of a missing dir = %v, %v", ids, err)
	}
	for _, name := range []string{"b", "a", ".tmp"} {
		if err := os.MkdirAll(cfg.NetNSDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.NetNSDir, name), nil, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(cfg.NetNSDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ids, err := n.List()
	if err != nil || !reflect.DeepEqual(ids, []string{"a", "b"}) {
		t.Errorf("List = %v, %v; want [a b]", ids, err)
	}
	if got := n.NetNSPath("a"); got != filepath.Join(cfg.NetNSDir, "a") {
		t.Errorf("NetNSPath = %s", got)
	}
}

func TestSetupWithoutConfigure(t *testing.T) {
	n, cfg := newTestNetwork(t, "x")
	_, err := n.Setup(context.Background(), Pod{ID: "p1", Namespace: "ns", Name: "p"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Setup without a conflist = %v, want not-exist", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.NetNSDir, "p1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("netns left behind: %v", err)
	}
}

func TestSetupRejectsBadInput(t *testing.T) {
	n, _ := newTestNetwork(t, "x")
	if err := n.Configure("10.244.1.0/24"); err != nil {
		t.Fatal(err)
	}
	for name, pod := range map[string]Pod{
		"bad id":   {ID: "../x"},
		"bad port": {ID: "p1", Ports: []PortMapping{{HostPort: 80, Protocol: "icmp", ContainerPort: 80}}},
	} {
		if _, err := n.Setup(context.Background(), pod); err == nil {
			t.Errorf("%s: Setup accepted %+v", name, pod)
		}
	}
	if ids, _ := n.List(); len(ids) != 0 {
		t.Errorf("netns left behind: %v", ids)
	}
}

func TestTeardownUnknown(t *testing.T) {
	n, _ := newTestNetwork(t, "x")
	if err := n.Teardown(context.Background(), "never-set-up"); err != nil {
		t.Errorf("Teardown of an unknown sandbox = %v, want nil", err)
	}
	if err := n.Configure("10.244.1.0/24"); err != nil {
		t.Fatal(err)
	}
	if err := n.Teardown(context.Background(), "never-set-up"); err != nil {
		t.Errorf("Teardown of an unknown sandbox after Configure = %v, want nil", err)
	}
	if err := n.Teardown(context.Background(), "a/b"); err == nil {
		t.Error("Teardown accepted an invalid id")
	}
}
