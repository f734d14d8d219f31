package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// testCommand is a command with flags of each kind the real ones use.
func testCommand(t *testing.T, file string, args ...string) *cobra.Command {
	t.Helper()
	cmd := &cobra.Command{Use: "agent", RunE: func(*cobra.Command, []string) error { return nil }}
	f := cmd.Flags()
	f.String("node-name", "default-name", "")
	f.Int("port", 10250, "")
	f.Bool("flag", false, "")
	f.StringSlice("tls-san", nil, "")
	f.StringToString("node-labels", nil, "")
	addConfigFlag(cmd)
	if file != "" {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestConfigPrecedence(t *testing.T) {
	file := "node-name: from-file\nport: 6443\nflag: true\ntls-san: [a.example, 10.0.0.1]\nnode-labels: {zone: z1, team: blue}\n"
	env := map[string]string{"SKIFF_NODE_NAME": "from-env", "SKIFF_PORT": "7000"}
	cmd := testCommand(t, file, "--port", "8000")
	if err := applyConfig(cmd, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"node-name":   "from-env", // env over file
		"port":        "8000",     // command line over env and file
		"flag":        "true",     // file over default
		"tls-san":     "[a.example,10.0.0.1]",
		"node-labels": "[team=blue,zone=z1]",
	} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	none := func(string) string { return "" }
	for _, tt := range []struct {
		file, want string
		env        map[string]string
	}{
		{"node-nmae: x\n", `config.yaml:1: unknown key "node-nmae" (not a flag of skiff agent)`, nil},
		{"config: other.yaml\n", `unknown key "config"`, nil},
		{"node-name: n\nport: ten\n", `config.yaml:2: port: invalid argument "ten"`, nil},
		{"node-labels: {a: [b]}\n", "nested value", nil},
		{"- a\n", "config.yaml:1: want a map of flag names to values", nil},
		{"", "SKIFF_PORT: invalid argument", map[string]string{"SKIFF_PORT": "x"}},
	} {
		cmd := testCommand(t, tt.file)
		getenv := none
		if tt.env != nil {
			getenv = func(k string) string { return tt.env[k] }
		}
		if err := applyConfig(cmd, getenv); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.file, err, tt.want)
		}
	}
	cmd := testCommand(t, "", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	if err := applyConfig(cmd, none); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("a missing named file: %v", err)
	}
	cmd = testCommand(t, "")
	_ = cmd.Flags().Lookup("config").Value.Set(filepath.Join(t.TempDir(), "absent.yaml"))
	if err := applyConfig(cmd, none); err != nil {
		t.Errorf("a missing default file: %v", err)
	}
}

// TestUsageValueNames: no flag's help text names its value by a
// back-quoted phrase (pflag takes the first `word` as the value's name).
func TestUsageValueNames(t *testing.T) {
	root := rootCommand()
	for _, cmd := range root.Commands() {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.ContainsAny(name, " :") {
				t.Errorf("skiff %s --%s: value named %q", cmd.Name(), f.Name, name)
			}
		})
	}
}

func TestTokenFileAndMode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("K10abc::server:xyz\n"), 0o600)
	var tok string
	if err := readTokenFile(&tok, file); err != nil || tok != "K10abc::server:xyz" {
		t.Errorf("token from file: %q %v", tok, err)
	}
	if err := readTokenFile(&tok, file); err == nil || !strings.Contains(err.Error(), "exclude") {
		t.Errorf("--token and --token-file both: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	tok = ""
	if err := readTokenFile(&tok, empty); err == nil {
		t.Error("an empty token file was taken")
	}
	if m, err := parseFileMode("0644"); err != nil || m != 0o644 {
		t.Errorf("0644: %v %v", m, err)
	}
	for _, bad := range []string{"644x", "1777", "rw-r--r--"} {
		if _, err := parseFileMode(bad); err == nil {
			t.Errorf("%q taken as a mode", bad)
		}
	}
}
