package supervisor

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRenderConfigGolden(t *testing.T) {
	got := renderConfig(Config{
		Dir:     "/var/lib/skiff/agent/containerd",
		Address: "/var/lib/skiff/agent/containerd/containerd.sock",
	})
	golden := filepath.Join("testdata", "config.toml")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("config.toml:\n%s\nwant:\n%s", got, want)
	}
}

func TestDefaultAddress(t *testing.T) {
	long := "/var/lib/" + strings.Repeat("x", 80) + "/agent/containerd"
	tests := []struct {
		name, dir, want string
	}{
		{"short dir holds the socket", "/var/lib/skiff/agent/containerd", "/var/lib/skiff/agent/containerd/containerd.sock"},
		{"long dir falls back to /run/skiff", long, "/run/skiff/containerd-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := defaultAddress(tt.dir)
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("defaultAddress = %q, want prefix %q", got, tt.want)
			}
			if n := len(got + ttrpcSuffix); n > maxSocketPath {
				t.Errorf("%q%s is %d bytes, more than %d", got, ttrpcSuffix, n, maxSocketPath)
			}
		})
	}
	if a, b := defaultAddress(long), defaultAddress(long+"2"); a == b {
		t.Errorf("two long dirs share the socket %s", a)
	}
}

func TestWithDefaults(t *testing.T) {
	bin := os.Args[0] // any executable will do
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"no dir", Config{Binary: bin}, true},
		{"relative address", Config{Dir: "/d", Binary: bin, Address: "c.sock"}, true},
		{"address too long", Config{Dir: "/d", Binary: bin, Address: "/" + strings.Repeat("a", 101)}, true},
		{"missing binary", Config{Dir: "/d", Binary: "/nonexistent/containerd"}, true},
		{"defaults", Config{Dir: "/d", Binary: bin}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (got.Address != "/d/containerd.sock" || got.Logger == nil) {
				t.Errorf("defaults = %+v", got)
			}
		})
	}
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/skiff`: `"/var/lib/skiff"`,
		`a"b\c`:          `"a\"b\\c"`,
		"tab\there":      `"tab\u0009here"`,
		"ünï":            `"ünï"`,
	} {
		if got := tomlString(in); got != want {
			t.Errorf("tomlString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestNextDelay(t *testing.T) {
	tests := []struct {
		prev, uptime, want time.Duration
	}{
		{0, 0, minDelay},
		{minDelay, time.Second, 2 * minDelay},
		{4 * time.Second, 0, 8 * time.Second},
		{8 * time.Second, 0, maxDelay},
		{maxDelay, time.Second, maxDelay},
		{maxDelay, stableUptime, minDelay},
	}
	for _, tt := range tests {
		if got := nextDelay(tt.prev, tt.uptime); got != tt.want {
			t.Errorf("nextDelay(%s, %s) = %s, want %s", tt.prev, tt.uptime, got, tt.want)
		}
	}
}

// TestDaemonEnvDropsNotifySocket: containerd must not answer for the
// agent's systemd unit.
func TestDaemonEnvDropsNotifySocket(t *testing.T) {
	got := daemonEnv([]string{"PATH=/bin", "NOTIFY_SOCKET=/run/systemd/notify", "HOME=/root"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root" {
		t.Errorf("daemon env %q", got)
	}
}
