// Package cni gives pods their network: it creates a named network namespace per
// pod sandbox and attaches it to the node's bridge with the standard CNI plugins
// (bridge with host-local IPAM, then portmap), through libcni.
//
// The node agent owns a Network. Setup and Teardown for different sandbox ids may
// run concurrently (libcni, host-local and iptables take their own locks); calls for
// the same id must be serialized by the caller, as the agent's pod worker does.
package cni

import "path/filepath"

// Config says where the plugins are and where the network keeps its state. Zero
// fields take the defaults below, which suit a node with the standard layout.
type Config struct {
	PluginDirs []string // default {"/usr/lib/cni", "/opt/cni/bin"}
	ConfDir    string   // where the agent writes its conflist, e.g. <data-dir>/agent/cni/net.d
	CacheDir   string   // libcni result cache, so DEL works after an agent restart
	NetNSDir   string   // named network namespaces live here, e.g. /run/skiff/netns
	Bridge     string   // default "skiff0"
	MTU        int      // of the bridge and pods' interfaces; 0: the plugin's default (the bridge's)
	// IPAMDir holds host-local's address allocations; default "ipam" beside
	// CacheDir, so allocations live and die with the agent's state.
	IPAMDir string
}

// Defaults for the zero fields of Config.
const (
	DefaultConfDir  = "/var/lib/skiff/agent/cni/net.d"
	DefaultCacheDir = "/var/lib/skiff/agent/cni/cache"
	DefaultNetNSDir = "/run/skiff/netns"
	DefaultBridge   = "skiff0"
)

// DefaultPluginDirs are searched for plugin binaries: Debian's package first,
// then the upstream release layout.
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func (c Config) withDefaults() Config {
	if len(c.PluginDirs) == 0 {
		c.PluginDirs = append([]string(nil), DefaultPluginDirs...)
	}
	if c.ConfDir == "" {
		c.ConfDir = DefaultConfDir
	}
	if c.CacheDir == "" {
		c.CacheDir = DefaultCacheDir
	}
	if c.NetNSDir == "" {
		c.NetNSDir = DefaultNetNSDir
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.IPAMDir == "" {
		c.IPAMDir = filepath.Join(filepath.Dir(c.CacheDir), "ipam")
	}
	return c
}
