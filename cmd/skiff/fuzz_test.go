package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// FuzzConfigFile reads any bytes as --config of `skiff server` and `skiff
// agent`, and as the installed node's file that uninstall reads. Nothing
// may panic. A file that is not a YAML map is refused; one with a key
// that is not a flag, or a value its flag refuses, is refused naming a
// key; one that is taken sets a flag for each of its keys.
func FuzzConfigFile(f *testing.F) {
	for _, seed := range []string{
		"data-dir: /srv/skiff\nsecure-port: 6443\ncluster-init: true\ntls-san: [k8s.example.com, 10.0.0.10]\n" +
			"node-labels: {zone: z1, team: blue}\nservice-cidr: 10.96.0.0/16\nwatch-bookmark-interval: 1m\n",
		"server: https://10.0.0.10:6443\ntoken: K10abc::server:secret\nnode-ip: 10.0.0.21\n" +
			"register-with-taints: [dedicated=gpu:NoSchedule]\nsystem-reserved: {cpu: 500m, memory: 1Gi}\nregistry-mirror: [\"docker.io=https://mirror:5000\"]\n",
		"# only a comment\n", "", "node-nmae: x\n", "config: other.yaml\n", "secure-port: ten\n", "secure-port: 1e400\n",
		"node-labels: {a: [b]}\n", "tls-san: [[a]]\n", "- a\n", "anonymous-auth: yes\n", "node-cidr-mask-size: -1\n",
		"cluster-cidr: 10.244.0.0/33\n", "watch-bookmark-interval: soon\n", "a: &x [*x]\n", "? [a]\n: b\n", "data-dir: null\n",
		"\"\": x\n", "port: 10250\nport: 10251\n", "{data-dir: /x, node-ip: \"::1\"}", "\t- bad indent\n",
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "config.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, parseErr := readConfig(path, true)
		for _, cmd := range []*cobra.Command{serverCommand(), agentCommand()} {
			checkConfig(t, cmd, path, file, parseErr)
		}
		if _, err := installedNode(path); parseErr != nil && err == nil {
			t.Errorf("installedNode took a file readConfig refused (%v)", parseErr)
		}
	})
}

// checkConfig applies the config file at path, file as readConfig read
// it, to cmd.
func checkConfig(t *testing.T, cmd *cobra.Command, path string, file configFile, parseErr error) {
	t.Helper()
	addConfigFlag(cmd)
	if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	err := applyConfig(cmd, func(string) string { return "" })
	switch {
	case parseErr != nil:
		if err == nil {
			t.Errorf("%s: took a file readConfig refused (%v)", cmd.Name(), parseErr)
		}
	case err != nil:
		if !namesKey(err, file.values) {
			t.Errorf("%s: %v names no key of the file", cmd.Name(), err)
		}
	default:
		for key := range file.values {
			if f := cmd.Flags().Lookup(key); f == nil || !f.Changed {
				t.Errorf("%s: key %q taken but no flag set", cmd.Name(), key)
			}
		}
	}
}

// namesKey says whether err names a key of file, as applyConfig quotes an
// unknown one and writes a known one before its flag's error.
func namesKey(err error, file map[string]any) bool {
	for key := range file {
		if strings.Contains(err.Error(), strconv.Quote(key)) || strings.Contains(err.Error(), ": "+key+": ") {
			return true
		}
	}
	return false
}
