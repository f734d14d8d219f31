package cni

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestConfigureGolden(t *testing.T) {
	n := New(Config{ConfDir: t.TempDir(), CacheDir: "/var/lib/skiff/agent/cni/cache"})
	if err := n.Configure("10.244.1.0/24"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(n.cfg.ConfDir, confFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "skiff.conflist.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("conflist differs from %s (run with -update to accept):\n%s", golden, got)
	}
	list, err := libcni.NetworkConfFromBytes(got)
	if err != nil {
		t.Fatalf("libcni cannot parse the conflist: %v", err)
	}
	if list.Name != "skiff" || list.CNIVersion != "1.0.0" || len(list.Plugins) != 2 ||
		list.Plugins[0].Network.Type != "bridge" || list.Plugins[1].Network.Type != "portmap" {
		t.Errorf("parsed list = %s %s %d plugins", list.Name, list.CNIVersion, len(list.Plugins))
	}
	if !list.Plugins[1].Network.Capabilities["portMappings"] {
		t.Error("portmap does not declare the portMappings capability")
	}
}

func TestConflist(t *testing.T) {
	tests := []struct {
		name, cidr string
		want       []string // substrings
		wantErr    bool
	}{
		{name: "canonical subnet", cidr: "10.244.1.7/24", want: []string{`"subnet": "10.244.1.0/24"`, `"dst": "0.0.0.0/0"`}},
		{name: "ipv6", cidr: "fd00:10:244:1::/64", want: []string{`"subnet": "fd00:10:244:1::/64"`, `"dst": "::/0"`}},
		{name: "bad", cidr: "10.244.1.0/33", wantErr: true},
		{name: "empty", cidr: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := conflist("br", tt.cidr, "/ipam", 0)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("conflist lacks %s:\n%s", w, got)
				}
			}
		})
	}
}

func TestConfigureIdempotent(t *testing.T) {
	dir := t.TempDir()
	n := New(Config{ConfDir: dir, CacheDir: filepath.Join(dir, "cache")})
	path := filepath.Join(dir, confFile)
	stat := func() os.FileInfo {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if err := n.Configure("10.244.1.0/24"); err != nil {
		t.Fatal(err)
	}
	first := stat()
	if err := n.Configure("10.244.1.0/24"); err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(first, stat()) {
		t.Error("unchanged Configure rewrote the file")
	}
	if err := n.Configure("10.244.2.0/24"); err != nil {
		t.Fatal(err)
	}
	second := stat()
	if os.SameFile(first, second) {
		t.Error("changed Configure did not replace the file")
	}
	if err := n.Configure("not-a-cidr"); err == nil {
		t.Error("Configure accepted an invalid cidr")
	}
	if !os.SameFile(second, stat()) {
		t.Error("failed Configure touched the file")
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "10.244.2.0/24") {
		t.Errorf("conflist has the wrong subnet:\n%s", data)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != confFile && e.Name() != "cache" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

func TestDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Bridge != "skiff0" || len(c.PluginDirs) != 2 || c.PluginDirs[0] != "/usr/lib/cni" ||
		c.NetNSDir != "/run/skiff/netns" || c.IPAMDir != "/var/lib/skiff/agent/cni/ipam" {
		t.Errorf("defaults = %+v", c)
	}
	c = Config{CacheDir: "/d/agent/cni/cache", IPAMDir: ""}.withDefaults()
	if c.IPAMDir != "/d/agent/cni/ipam" {
		t.Errorf("IPAMDir = %s, want beside the cache", c.IPAMDir)
	}
}

func TestPluginsForRunsPortmapOnlyWithHostPorts(t *testing.T) {
	data, err := conflist("skiff0", "10.244.1.0/24", "/ipam", 0)
	if err != nil {
		t.Fatal(err)
	}
	full, err := libcni.NetworkConfFromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	withPorts, err := runtimeConf(Pod{ID: "a", Ports: []PortMapping{{HostPort: 8080, ContainerPort: 80}}}, "/ns")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		rt   *libcni.RuntimeConf
		want []string
	}{
		"no host ports": {bareRuntimeConf("a", "/ns"), []string{"bridge"}},
		"host ports":    {withPorts, []string{"bridge", "portmap"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			list, err := pluginsFor(full, tt.rt)
			if err != nil {
				t.Fatal(err)
			}
			// DEL runs what the cache recorded, which is list.Bytes: check
			// the parsed plugins and the bytes agree.
			again, err := libcni.NetworkConfFromBytes(list.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range []*libcni.NetworkConfigList{list, again} {
				var got []string
				for _, p := range l.Plugins {
					got = append(got, p.Network.Type)
				}
				if !slices.Equal(got, tt.want) || l.Name != full.Name || l.CNIVersion != full.CNIVersion {
					t.Errorf("plugins %v (list %s %s), want %v", got, l.Name, l.CNIVersion, tt.want)
				}
			}
		})
	}
}
