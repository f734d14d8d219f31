package agent

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's limits on what a pod's resolver config holds.
const (
	maxNameservers    = 3
	maxSearchDomains  = 32
	maxSearchListSize = 2048
)

// dnsConfig is a resolver configuration: resolv.conf's nameserver, search
// and options lines.
type dnsConfig struct {
	nameservers, searches, options []string
}

// parseResolvConf reads the lines of a resolv.conf the pod config is built
// from; the last search line wins, as in the resolver.
func parseResolvConf(data []byte) dnsConfig {
	var c dnsConfig
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			c.nameservers = append(c.nameservers, f[1])
		case "search", "domain":
			c.searches = f[1:]
		case "options":
			c.options = append(c.options, f[1:]...)
		}
	}
	return c
}

// clusterDNS is what the node knows of cluster DNS: the server's address
// ("" when the node has none) and the cluster's domain.
type clusterDNS struct {
	server, domain string
}

// podDNSConfig is the resolver config of pod, as the kubelet builds it:
// ClusterFirst (and ClusterFirstWithHostNet) pods ask the cluster DNS and
// search their namespace's services first, with ndots:5; a ClusterFirst pod
// on the host network, and every pod when the node has no cluster DNS, gets
// the node's config (Default); None starts empty. The pod's dnsConfig is
// then added: its nameservers and searches after the others, its options
// replacing those of the same name. missingDNS reports a ClusterFirst pod
// that had to fall back to the node's config.
func podDNSConfig(pod *v1.Pod, host dnsConfig, cluster clusterDNS) (c dnsConfig, missingDNS bool) {
	policy := pod.Spec.DNSPolicy
	if policy == v1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = v1.DNSDefault
	}
	switch policy {
	case v1.DNSNone:
	case v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet:
		if cluster.server == "" {
			c, missingDNS = host, true
			break
		}
		c.nameservers = []string{cluster.server}
		if d := cluster.domain; d != "" {
			c.searches = []string{pod.Namespace + ".svc." + d, "svc." + d, d}
		}
		c.searches = append(c.searches, host.searches...)
		c.options = []string{"ndots:5"}
	default:
		c = host
	}
	if extra := pod.Spec.DNSConfig; extra != nil {
		c.nameservers = unique(append(slices.Clone(c.nameservers), extra.Nameservers...))
		c.searches = unique(append(slices.Clone(c.searches), extra.Searches...))
		c.options = mergeOptions(c.options, extra.Options)
	}
	c.nameservers = c.nameservers[:min(len(c.nameservers), maxNameservers)]
	c.searches = limitSearches(c.searches)
	return c, missingDNS
}

func unique(items []string) []string {
	var out []string
	for _, s := range items {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions returns base with each of extra set: an option of the same
// name is replaced, a new one appended.
func mergeOptions(base []string, extra []v1.PodDNSConfigOption) []string {
	out := slices.Clone(base)
	for _, o := range extra {
		text := o.Name
		if o.Value != nil {
			text += ":" + *o.Value
		}
		i := slices.IndexFunc(out, func(s string) bool { name, _, _ := strings.Cut(s, ":"); return name == o.Name })
		if i >= 0 {
			out[i] = text
		} else {
			out = append(out, text)
		}
	}
	return out
}

// limitSearches keeps the first searches that fit the resolver's limits.
func limitSearches(searches []string) []string {
	size := 0
	for i, s := range searches {
		size += len(s) + 1
		if i == maxSearchDomains || size > maxSearchListSize {
			return searches[:i]
		}
	}
	return searches
}

// render writes c as resolv.conf, in containerd's order.
func (c dnsConfig) render() []byte {
	var b strings.Builder
	if len(c.searches) > 0 {
		b.WriteString("search " + strings.Join(c.searches, " ") + "\n")
	}
	for _, ns := range c.nameservers {
		b.WriteString("nameserver " + ns + "\n")
	}
	if len(c.options) > 0 {
		b.WriteString("options " + strings.Join(c.options, " ") + "\n")
	}
	return []byte(b.String())
}

// systemdResolvConf is where systemd-resolved writes the upstream servers
// that its stub at 127.0.0.53 forwards to.
const systemdResolvConf = "/run/systemd/resolve/resolv.conf"

// defaultResolvConf is file, unless every nameserver it lists is a
// loopback address (systemd-resolved's stub), which a pod cannot reach from
// its own network namespace: then upstream, as the kubelet's users and
// k3s do, if it exists.
func defaultResolvConf(file, upstream string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return file
	}
	servers := parseResolvConf(data).nameservers
	for _, ns := range servers {
		if ip := net.ParseIP(ns); ip == nil || !ip.IsLoopback() {
			return file
		}
	}
	if _, err := os.Stat(upstream); len(servers) == 0 || err != nil {
		return file
	}
	return upstream
}
