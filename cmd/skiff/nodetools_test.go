package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestNodeDataDir(t *testing.T) {
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == "SKIFF_DATA_DIR" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name      string
		args      []string
		env       string
		dir       string
		remaining []string
	}{
		{"flag then args", []string{"--data-dir", "/d", "ps", "-a"}, "/e", "/d", []string{"ps", "-a"}},
		{"flag with = among args", []string{"ps", "--data-dir=/d", "-q"}, "", "/d", []string{"ps", "-q"}},
		{"environment", []string{"images"}, "/e", "/e", []string{"images"}},
		{"config file", []string{"pods"}, "", "/from/config", []string{"pods"}},
		{"default", []string{"pods"}, "", "/var/lib/skiff", []string{"pods"}},
	} {
		config := filepath.Join(t.TempDir(), "config.yaml")
		if tc.name == "config file" {
			os.WriteFile(config, []byte("data-dir: /from/config\nnode-labels: {a: b}\n"), 0o600)
		}
		dir, rest, err := nodeDataDir(tc.args, env(tc.env), config)
		if err != nil || dir != tc.dir || !slices.Equal(rest, tc.remaining) {
			t.Errorf("%s: %q %q %v, want %q %q", tc.name, dir, rest, err, tc.dir, tc.remaining)
		}
	}
}
