package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestInstallSettingsRoundTrip: the flags given to `skiff install agent`
// are written as the config file, and `skiff agent` reading that file
// gets the same values; flags not given, and install's own, stay out.
func TestInstallSettingsRoundTrip(t *testing.T) {
	inst := installRole("agent", agentCommand())
	args := []string{"--server", "https://10.0.0.1:6443", "--token", "K10x::node:y", "--node-labels", "zone=a,team=b",
		"--insecure-registry", "r1:5000,r2", "--container-log-max-files", "3", "--proxy-sync-period", "30m", "--timeout", "1m"}
	if err := inst.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	settings := givenSettings(inst.Flags(), "timeout")
	if _, ok := settings["timeout"]; ok || len(settings) != 6 {
		t.Errorf("settings %v: want the six flags given, without --timeout", settings)
	}
	data, err := yaml.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run := agentCommand()
	addConfigFlag(run)
	if err := run.ParseFlags([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfig(run, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	for name := range settings {
		if got, want := run.Flags().Lookup(name).Value.String(), inst.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s: %q from the file, want %q", name, got, want)
		}
	}
}

// TestInstalledNode reads the node's layout from a server's config file,
// ignoring the server's own keys.
func TestInstalledNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	file := "data-dir: /srv/skiff\ncni-bridge: br9\nsecure-port: 7443\nservice-cidr: 10.50.0.0/16\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	node, err := installedNode(path)
	if err != nil {
		t.Fatal(err)
	}
	if node.dataDir != "/srv/skiff" || node.cfg.Bridge != "br9" || node.cfg.NetNSDir != "/run/skiff/netns" {
		t.Errorf("node %+v", node)
	}
	if ip, _ := node.dnsAddress(); ip != "10.50.0.10" {
		t.Errorf("cluster DNS %s", ip)
	}
}

// TestUninstallReadsAnyConfig: uninstall's --config names a server's or an
// agent's file, whose keys are not uninstall's flags.
func TestUninstallReadsAnyConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("node-ip: 10.0.0.1\nserver: https://x:6443\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := uninstallCommand()
	if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfig(cmd, func(string) string { return "" }); err != nil {
		t.Errorf("uninstall --config with a node's file: %v", err)
	}
}

// TestCompletion: `skiff completion bash` prints a completion script that
// knows skiff's commands.
func TestCompletion(t *testing.T) {
	root := rootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"completion", "bash"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "__start_skiff") {
		t.Errorf("completion script:\n%.300s", out.String())
	}
	root.SetArgs([]string{"__complete", "inst"})
	out.Reset()
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "install") {
		t.Errorf("completing inst: %v\n%s", err, out.String())
	}
}
