package agent

import (
	"cmp"
	"crypto/tls"
	"log/slog"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/registries"
	"github.com/skiff-lab/skiff/host"
)

// Config is what an agent needs to run a node. Zero values take the defaults
// of a node installed by test/vm/provision.sh.
type Config struct {
	REST     *rest.Config // how to reach the API server (required, or else Server or Kubeconfig)
	NodeName string       // required
	DataDir  string       // state goes under DataDir/agent; default /var/lib/skiff
	// Without REST, Run reaches the API server with the credentials in
	// Kubeconfig, at Server if given (else the kubeconfig's). With Token
	// it first joins the cluster at Server (package agent/join) unless
	// Kubeconfig holds this node's valid certificate; a node that joined
	// so (its keys in DataDir/agent/pki) has its client certificate
	// renewed as it ages and, without TLSCertFile, its serving certificate
	// from the CSR API.
	Server, Token, Kubeconfig string
	// BalanceServers, without REST, reaches the API servers through a
	// local load balancer that fails over between them (package
	// agent/serverlb), the servers it learns kept in
	// DataDir/agent/servers.json (`skiff agent`; a server's own agent
	// talks to its server).
	BalanceServers bool
	// Registered, if set, is closed once the Node is registered and the
	// pods bound to it are known (systemd's READY=1).
	Registered chan<- struct{}

	ContainerdAddress string // a running containerd to use; empty: start and supervise our own
	ContainerdBinary  string // default "containerd" from PATH
	PauseBinary       []byte // the static skiff-pause program, packed into the pause image (required)

	NodeIP             string // default: the default-route interface's (defaultNodeIP)
	NodeExternalIP     string // the Node's ExternalIP, if it has one
	MaxPods            int    // pods the node takes; default 110
	NodeLabels         map[string]string
	Taints             []v1.Taint
	SystemReserved     v1.ResourceList
	InsecureRegistries []string // host[:port] pulled from over plain HTTP
	// RegistryMirrors are, by registry host, endpoints (URLs) pulled from
	// before the registry itself.
	RegistryMirrors map[string][]string
	// Registries are the node's registries.yaml (mirrors, rewrites,
	// logins, TLS), for every pull; RegistryMirrors come after its mirrors.
	Registries *registries.Registry

	PodLogDir     string   // default /var/log/pods
	CNIPluginDirs []string // default /usr/lib/cni, /opt/cni/bin
	NetNSDir      string   // default /run/skiff/netns
	Bridge        string   // default skiff0
	CgroupRoot    string   // default /skiff
	// ResolvConf is the node's resolver config, the base of pods'. Default
	// /etc/resolv.conf, or systemd-resolved's upstream file when that one
	// lists only its loopback stub (defaultResolvConf).
	ResolvConf string
	// ClusterDNS is the cluster DNS server's address, given to ClusterFirst
	// pods and served by the agent (package dns) on the node itself; ""
	// serves none and gives pods the node's resolver config.
	// ClusterDomain is the cluster's DNS domain; default cluster.local.
	ClusterDNS, ClusterDomain string
	// TracingEndpoint, if set, is an OTLP/HTTP collector's traces URL the
	// steps of the node's pods also go to; they always go to the server.
	TracingEndpoint string
	Namespace       string // containerd namespace; default "skiff"
	Workers         int    // pods synced in parallel; default 8

	// ClusterCIDR is the range of every node's pod CIDR (the server's
	// --cluster-cidr; default 10.244.0.0/16): pods' traffic to it keeps its
	// source address, traffic beyond it leaves with the node's.
	ClusterCIDR string
	// PodNetwork is how pods reach other nodes' pods: "host-gw" (the
	// default: routes via the nodes' addresses, one L2 segment) or "vxlan"
	// (encapsulated to the nodes' addresses, any routed network).
	PodNetwork string

	// The node's service proxy (package proxy) routes ServiceCIDR (default
	// 10.96.0.0/16), syncing at most every ProxyMinSyncPeriod and fully
	// every ProxySyncPeriod (kube-proxy's defaults, 1 s and 1 h); it does
	// not run with DisableProxy.
	// ProxyHealthzAddress serves its /healthz (empty: not served).
	ServiceCIDR                         string
	ProxyMinSyncPeriod, ProxySyncPeriod time.Duration
	ProxyHealthzAddress                 string
	DisableProxy                        bool

	// LogRotation bounds each container's log files (the kubelet's
	// --container-log-max-size and --container-log-max-files).
	LogRotation cri.LogRotation

	// The node API (the kubelet's port, package nodeapi) is served on Port
	// (0: not served) with a certificate for the node's name and address:
	// from TLSCertFile and TLSKeyFile, or else kept by ServingCert (which
	// returns how to get the current one: it may be renewed while the
	// agent runs).
	// Only client certificates that chain to ClientCA (PEM; default: the
	// CA the REST config trusts) and are named APIServerClient are
	// accepted.
	Port                    int
	TLSCertFile, TLSKeyFile string
	ServingCert             func(names []string) (current func() *tls.Certificate, err error)
	ClientCA                []byte
	APIServerClient         string // default "skiff-apiserver-kubelet-client"
}

// The pod network backends (Config.PodNetwork).
const (
	PodNetworkHostGW = "host-gw"
	PodNetworkVXLAN  = "vxlan"
)

// DefaultAPIServerClient is the common name of the API server's client
// certificate for node APIs.
const DefaultAPIServerClient = "skiff-apiserver-kubelet-client"

func (c *Config) setDefaults() {
	if c.DataDir == "" {
		c.DataDir = "/var/lib/skiff"
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = "10.244.0.0/16"
	}
	if c.NodeIP == "" {
		c.NodeIP = defaultNodeIP(cmp.Or(c.ServiceCIDR, "10.96.0.0/16"), c.ClusterCIDR)
	}
	if c.PodNetwork == "" {
		c.PodNetwork = PodNetworkHostGW
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.ResolvConf == "" {
		c.ResolvConf = defaultResolvConf("/etc/resolv.conf", systemdResolvConf)
	}
	if c.NetNSDir == "" {
		c.NetNSDir = "/run/skiff/netns"
	}
	if c.Workers == 0 {
		c.Workers = 8
	}
	if c.APIServerClient == "" {
		c.APIServerClient = DefaultAPIServerClient
	}
}

// defaultNodeIP is the node's address when no flag gives one: the
// default-route interface's, never one the agent manages itself (package
// host's ChooseAddress), 127.0.0.1 when the machine cannot say.
func defaultNodeIP(serviceCIDR, clusterCIDR string) string {
	exclude, err := host.ManagedPrefixes(serviceCIDR, clusterCIDR)
	if err != nil {
		return "127.0.0.1" // the CIDR flags are refused with their names later
	}
	ip, err := host.DefaultAddress(exclude...)
	if err != nil {
		slog.Warn("node address: using 127.0.0.1", "err", err)
		return "127.0.0.1"
	}
	return ip.String()
}

// dir is a path under the agent's state directory.
func (c *Config) dir(parts ...string) string {
	return filepath.Join(append([]string{c.DataDir, "agent"}, parts...)...)
}
