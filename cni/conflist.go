package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/containerd/continuity"
	"github.com/containernetworking/cni/libcni"
)

const (
	networkName = "skiff"
	cniVersion  = "1.0.0"
	confFile    = "10-skiff.conflist"
)

type confList struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgeConf struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge"`
	IsGateway   bool     `json:"isGateway"`
	IPMasq      bool     `json:"ipMasq"`
	HairpinMode bool     `json:"hairpinMode"`
	MTU         int      `json:"mtu,omitempty"`
	IPAM        ipamConf `json:"ipam"`
}

type ipamConf struct {
	Type    string        `json:"type"`
	Ranges  [][]ipamRange `json:"ranges"`
	Routes  []ipamRoute   `json:"routes"`
	DataDir string        `json:"dataDir"`
}

type ipamRange struct {
	Subnet string `json:"subnet"`
}

type ipamRoute struct {
	Dst string `json:"dst"`
}

type portmapConf struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	SNAT         bool            `json:"snat"`
}

// conflist renders the network list for a node: the bridge plugin with host-local
// addresses from podCIDR (allocations kept in ipamDir), then portmap for hostPorts.
func conflist(bridge, podCIDR, ipamDir string, mtu int) ([]byte, error) {
	_, subnet, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("parse pod cidr: %w", err)
	}
	defaultRoute := "0.0.0.0/0"
	if subnet.IP.To4() == nil {
		defaultRoute = "::/0"
	}
	list := confList{CNIVersion: cniVersion, Name: networkName, Plugins: []any{
		bridgeConf{Type: "bridge", Bridge: bridge, IsGateway: true, IPMasq: false, HairpinMode: true, MTU: mtu,
			IPAM: ipamConf{
				Type:    "host-local",
				Ranges:  [][]ipamRange{{{Subnet: subnet.String()}}},
				Routes:  []ipamRoute{{Dst: defaultRoute}},
				DataDir: ipamDir,
			}},
		portmapConf{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: true},
	}}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode conflist: %w", err)
	}
	return append(data, '\n'), nil
}

func (n *Network) confPath() string { return filepath.Join(n.cfg.ConfDir, confFile) }

// Configure writes the conflist for this node's pod CIDR (idempotent; rewrites only
// on change). The file is replaced atomically, so a concurrent Setup reads either
// the old or the new list. Pods set up before a change keep their own list in the
// libcni cache, so their Teardown is unaffected.
func (n *Network) Configure(podCIDR string) error {
	data, err := conflist(n.cfg.Bridge, podCIDR, n.cfg.IPAMDir, n.cfg.MTU)
	if err != nil {
		return fmt.Errorf("configure pod network: %w", err)
	}
	if old, err := os.ReadFile(n.confPath()); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := writeFileAtomic(n.confPath(), data); err != nil {
		return fmt.Errorf("configure pod network: %w", err)
	}
	return nil
}

// loadConfList reads the list Configure wrote; the error wraps fs.ErrNotExist when
// Configure was never called.
func (n *Network) loadConfList() (*libcni.NetworkConfigList, error) {
	data, err := os.ReadFile(n.confPath())
	if err != nil {
		return nil, fmt.Errorf("read conflist: %w", err)
	}
	list, err := libcni.NetworkConfFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("parse conflist %s: %w", n.confPath(), err)
	}
	return list, nil
}

// writeFileAtomic writes path whole or not at all, creating its directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := continuity.AtomicWriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// pluginsFor is the network list a pod's ADD runs: without portmap unless the
// pod publishes host ports (portmap has nothing to do otherwise, and each
// plugin is a process start). libcni caches the list ADD ran, so DEL runs the
// same plugins.
func pluginsFor(list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) (*libcni.NetworkConfigList, error) {
	if _, ports := rt.CapabilityArgs["portMappings"]; ports {
		return list, nil
	}
	var raw map[string]any
	if err := json.Unmarshal(list.Bytes, &raw); err != nil {
		return nil, fmt.Errorf("parse conflist: %w", err)
	}
	plugins, _ := raw["plugins"].([]any)
	kept := plugins[:0]
	for _, p := range plugins {
		if conf, _ := p.(map[string]any); conf["type"] != "portmap" {
			kept = append(kept, p)
		}
	}
	raw["plugins"] = kept
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("encode conflist: %w", err)
	}
	return libcni.NetworkConfFromBytes(data)
}
