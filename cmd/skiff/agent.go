package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/skiff-lab/skiff/agent"
	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/admit"
	"github.com/skiff-lab/skiff/cri/registries"
)

func agentCommand() *cobra.Command {
	var cleanup bool
	var tokenFile string
	flags := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: register this node and run its pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cleanup {
				cfg, err := flags.teardownConfig()
				if err != nil {
					return err
				}
				return agent.Cleanup(cmd.Context(), cfg)
			}
			if err := readTokenFile(&flags.cfg.Token, tokenFile); err != nil {
				return err
			}
			if flags.cfg.Token != "" && flags.cfg.Server == "" {
				return errors.New("--token needs --server")
			}
			cfg, err := flags.config()
			if err != nil {
				return err
			}
			cfg.Registered = readyNotifier(cmd.Context(), "skiff-agent")
			cfg.BalanceServers = true
			return agent.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.cfg.Server, "server", "", "URL of the API server (overrides the kubeconfig's)")
	f.StringVar(&flags.cfg.Kubeconfig, "kubeconfig", "/etc/skiff/agent.kubeconfig", "kubeconfig with the agent's credentials (written by a join with --token)")
	f.StringVar(&flags.cfg.Token, "token", "", "join token (the server's <data-dir>/server/token, or one from skiff token create): join the cluster at --server unless the kubeconfig already holds this node's valid certificate")
	f.StringVar(&tokenFile, "token-file", "", "file holding --token (instead of --token)")
	f.StringVar(&flags.dataDir, "data-dir", "/var/lib/skiff", "state directory; the agent keeps its state under <data-dir>/agent")
	f.StringVar(&flags.cfg.ServiceCIDR, "service-cidr", "10.96.0.0/16", "the cluster's service CIDR (the server's --service-cidr)")
	f.StringVar(&flags.cfg.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "the cluster's pod CIDR (the server's --cluster-cidr): pods' traffic beyond it is masqueraded")
	f.BoolVar(&cleanup, "cleanup", false, "remove the service proxy's iptables chains and rules, the cluster DNS address, the routes to other nodes' pods and the VXLAN device, then exit")
	flags.register(f)
	return cmd
}

// agentFlags are the flags `skiff agent` and `skiff server` (for its
// in-process agent) share.
type agentFlags struct {
	cfg        agent.Config
	clusterDNS string
	dataDir    string
	taints     string
	reserved   map[string]string
	logMaxSize string
	mirrors    []string
	registries string
}

func (a *agentFlags) register(f *pflag.FlagSet) {
	host, _ := os.Hostname()
	f.StringVar(&a.cfg.NodeName, "node-name", strings.ToLower(host), "name of this node")
	f.StringVar(&a.cfg.NodeIP, "node-ip", "", "address of this node (default: first address of an up, non-loopback interface)")
	f.StringVar(&a.cfg.NodeExternalIP, "node-external-ip", "", "the node's ExternalIP, an address it is reached at from outside the cluster (a public or NATed one)")
	f.IntVar(&a.cfg.MaxPods, "max-pods", 110, "pods the node takes at most")
	f.StringVar(&a.cfg.ResolvConf, "resolv-conf", "", "resolver config pods' DNS settings start from (default /etc/resolv.conf, or systemd-resolved's upstream file when it lists only the 127.0.0.53 stub)")
	f.StringVar(&a.cfg.ContainerdAddress, "containerd-address", "", "socket of a running containerd to use (default: start and supervise one under <data-dir>/agent/containerd)")
	f.StringToStringVar(&a.cfg.NodeLabels, "node-labels", nil, "labels to add to the Node: key=value,...")
	f.StringVar(&a.taints, "register-with-taints", "", "taints the Node registers with: key=value:Effect,...")
	f.StringToStringVar(&a.reserved, "system-reserved", nil, "resources held back from pods: cpu=100m,memory=256Mi,...")
	f.StringSliceVar(&a.cfg.InsecureRegistries, "insecure-registry", nil, "registry host[:port] to pull from over plain HTTP (repeatable)")
	f.StringArrayVar(&a.mirrors, "registry-mirror", nil, "REGISTRY=URL: a mirror tried before the registry (host[:port], docker.io for Docker Hub) when pulling, e.g. registry.k8s.io=http://10.0.0.5:5000 (repeatable, tried in order)")
	f.StringVar(&a.registries, "private-registry", registries.DefaultPath, "registries.yaml as k3s's: mirrors (with rewrites), logins and TLS settings of registries, for every pull (read at start; a missing default file is none)")
	f.StringVar(&a.cfg.PodLogDir, "pod-log-dir", "/var/log/pods", "where container logs are written")
	f.StringVar(&a.cfg.Bridge, "cni-bridge", "skiff0", "name of the bridge pods are attached to")
	f.StringVar(&a.cfg.PodNetwork, "pod-network", agent.PodNetworkHostGW, `how pods reach other nodes' pods: "host-gw" (routes via the nodes' addresses; the nodes share an L2 segment) or "vxlan" (encapsulated, UDP 8472; the nodes' addresses need only be routed)`)
	f.StringVar(&a.cfg.NetNSDir, "netns-dir", "/run/skiff/netns", "where pods' network namespaces are mounted")
	f.StringVar(&a.cfg.CgroupRoot, "cgroup-root", "/skiff", "parent cgroup of all pods")
	f.IntVar(&a.cfg.Port, "port", 10250, "port of the node API (logs, exec, attach, port-forward, stats) the API server proxies to; 0: not served")
	f.StringVar(&a.cfg.TLSCertFile, "tls-cert-file", "", "serving certificate of the node API, signed by the cluster CA (the agent of skiff server gets one from the server)")
	f.StringVar(&a.cfg.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&a.logMaxSize, "container-log-max-size", "10Mi", "size at which a container's log file is rotated")
	f.IntVar(&a.cfg.LogRotation.MaxFiles, "container-log-max-files", 5, "log files kept per container, the current one included (at least 2)")
	f.DurationVar(&a.cfg.ProxyMinSyncPeriod, "proxy-min-sync-period", time.Second, "least time between two syncs of the service proxy's rules")
	f.DurationVar(&a.cfg.ProxySyncPeriod, "proxy-sync-period", time.Hour, "how often the service proxy rewrites all its rules even when nothing changed")
	f.StringVar(&a.cfg.ProxyHealthzAddress, "proxy-healthz-bind-address", "0.0.0.0:10256", "address of the service proxy's /healthz (empty: not served)")
	f.BoolVar(&a.cfg.DisableProxy, "disable-proxy", false, "do not run the service proxy (kube-proxy) on this node")
	f.StringVar(&a.clusterDNS, "cluster-dns", "", `address of the cluster DNS, served by this node for its pods (default: the tenth address of the service CIDR; "none": no cluster DNS, pods get the node's resolvers)`)
	f.StringVar(&a.cfg.ClusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	f.StringVar(&a.cfg.TracingEndpoint, "tracing-endpoint", "", "OTLP/HTTP traces URL of a collector (Jaeger, Tempo, an OpenTelemetry collector: http://HOST:4318/v1/traces) the steps of pods' journeys are also sent to")
}

// config checks the flags and builds the agent's configuration.
func (a *agentFlags) config() (agent.Config, error) {
	cfg := a.cfg
	cfg.DataDir = a.dataDir
	var err error
	if cfg.PauseBinary, err = pauseBinary(); err != nil {
		return cfg, err
	}
	if cfg.Taints, err = parseTaints(a.taints); err != nil {
		return cfg, err
	}
	if cfg.SystemReserved, err = parseResources(a.reserved); err != nil {
		return cfg, err
	}
	if cfg.Registries, err = registries.Load(a.registries, a.registries != registries.DefaultPath); err != nil {
		return cfg, fmt.Errorf("--private-registry: %w", err)
	}
	if cfg.RegistryMirrors, err = parseMirrors(a.mirrors); err != nil {
		return cfg, err
	}
	size, err := resource.ParseQuantity(a.logMaxSize)
	if err != nil || size.Sign() <= 0 {
		return cfg, fmt.Errorf("--container-log-max-size: %q is not a positive quantity", a.logMaxSize)
	}
	cfg.LogRotation.MaxSize = size.Value()
	if cfg.LogRotation.MaxFiles < 2 {
		return cfg, fmt.Errorf("--container-log-max-files: %d is fewer than 2", cfg.LogRotation.MaxFiles)
	}
	if cfg.PodNetwork != agent.PodNetworkHostGW && cfg.PodNetwork != agent.PodNetworkVXLAN {
		return cfg, fmt.Errorf("--pod-network: %q is not %s or %s", cfg.PodNetwork, agent.PodNetworkHostGW, agent.PodNetworkVXLAN)
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return cfg, errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if ip := cfg.NodeExternalIP; ip != "" && net.ParseIP(ip) == nil {
		return cfg, fmt.Errorf("--node-external-ip: %q is not an IP address", ip)
	}
	if cfg.MaxPods < 1 {
		return cfg, fmt.Errorf("--max-pods: %d is fewer than 1", cfg.MaxPods)
	}
	if err := checkNodeLabels(cfg.NodeLabels); err != nil {
		return cfg, err
	}
	cfg.ClusterDNS, err = a.dnsAddress()
	return cfg, err
}

// checkNodeLabels refuses, as the kubelet does, labels a node may not give
// itself (NodeRestriction would refuse its registration): an admin sets
// those, e.g. with kubectl label.
func checkNodeLabels(labels map[string]string) error {
	var bad []string
	for key := range labels {
		if !admit.NodeMaySet(key) {
			bad = append(bad, key)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("--node-labels: a node may not set %s on itself (allowed in kubernetes.io and k8s.io: %s)",
			strings.Join(bad, ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	return nil
}

// dnsAddress is the cluster DNS address the flags give: --cluster-dns, or
// the tenth address of the service CIDR, or none.
func (a *agentFlags) dnsAddress() (string, error) {
	switch a.clusterDNS {
	case "none":
		return "", nil
	case "":
		prefix, err := netip.ParsePrefix(a.cfg.ServiceCIDR)
		if err != nil {
			return "", fmt.Errorf("--service-cidr: %w", err)
		}
		ip := prefix.Masked().Addr()
		for range 10 {
			ip = ip.Next()
		}
		return ip.String(), nil
	}
	if ip, err := netip.ParseAddr(a.clusterDNS); err != nil || !ip.Is4() {
		return "", fmt.Errorf("--cluster-dns: %q is not an IPv4 address", a.clusterDNS)
	}
	return a.clusterDNS, nil
}

// teardownConfig is the node's configuration as far as removing what the
// agent made needs it (`--cleanup`, `skiff uninstall`): the flags as
// given, the cluster DNS address worked out; no other flag is checked.
func (a *agentFlags) teardownConfig() (agent.Config, error) {
	cfg := a.cfg
	cfg.DataDir = a.dataDir
	var err error
	cfg.ClusterDNS, err = a.dnsAddress()
	return cfg, err
}

func parseTaints(s string) ([]v1.Taint, error) {
	var out []v1.Taint
	for _, t := range splitList(s) {
		kv, effect, ok := strings.Cut(t, ":")
		key, value, _ := strings.Cut(kv, "=")
		switch v1.TaintEffect(effect) {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			ok = false
		}
		if !ok || key == "" {
			return nil, fmt.Errorf("--register-with-taints: %q is not key[=value]:NoSchedule|PreferNoSchedule|NoExecute", t)
		}
		out = append(out, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
	}
	return out, nil
}

func parseResources(pairs map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range pairs {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--system-reserved: %s: %w", k, err)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// runAgent is the in-process agent of `skiff server`: it joins the
// cluster with the server's token as any node does, and keeps its
// kubeconfig in <data-dir>/agent/kubeconfig.
func (a *agentFlags) runAgent(ctx context.Context, creds controlplane.NodeCredentials) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	cfg.Server, cfg.Token, cfg.Kubeconfig = creds.Server, creds.Token, filepath.Join(a.dataDir, "agent", "kubeconfig")
	return agent.Run(ctx, cfg)
}

// parseMirrors reads --registry-mirror REGISTRY=URL flags.
func parseMirrors(flags []string) (map[string][]string, error) {
	mirrors := map[string][]string{}
	for _, f := range flags {
		registry, endpoint, _ := strings.Cut(f, "=")
		u, err := url.Parse(endpoint)
		if registry == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--registry-mirror: %q is not REGISTRY=URL (e.g. registry.k8s.io=https://mirror.example:5000)", f)
		}
		mirrors[registry] = append(mirrors[registry], endpoint)
	}
	return mirrors, nil
}
