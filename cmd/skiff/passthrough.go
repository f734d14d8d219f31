package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// passthroughs are k3s's --<component>-arg flags. Each value is
// name=value, naming a flag of the upstream component; it sets the skiff
// flag that does the same thing. Only the upstream flags that map to
// something skiff does are accepted: the others are refused by name, not
// dropped.
var passthroughs = map[string]struct {
	component string
	flags     map[string]string // upstream flag → skiff flag
}{
	"kubelet-arg": {"the kubelet", map[string]string{
		"max-pods": "max-pods", "node-labels": "node-labels", "register-with-taints": "register-with-taints",
		"system-reserved": "system-reserved", "resolv-conf": "resolv-conf", "cluster-dns": "cluster-dns",
		"cluster-domain": "cluster-domain", "container-log-max-size": "container-log-max-size",
		"container-log-max-files": "container-log-max-files", "node-ip": "node-ip", "hostname-override": "node-name",
		"port": "port", "tls-cert-file": "tls-cert-file", "tls-private-key-file": "tls-private-key-file",
		"cgroup-root": "cgroup-root",
	}},
	"kube-proxy-arg": {"kube-proxy", map[string]string{
		"iptables-min-sync-period": "proxy-min-sync-period", "iptables-sync-period": "proxy-sync-period",
		"healthz-bind-address": "proxy-healthz-bind-address", "cluster-cidr": "cluster-cidr",
	}},
	"kube-apiserver-arg": {"kube-apiserver", map[string]string{
		"advertise-address": "advertise-address", "bind-address": "bind-address", "secure-port": "secure-port",
		"service-cluster-ip-range": "service-cidr", "service-node-port-range": "service-node-port-range",
		"etcd-servers": "etcd-servers", "etcd-cafile": "etcd-cafile", "etcd-certfile": "etcd-certfile", "etcd-keyfile": "etcd-keyfile",
		"token-auth-file": "token-auth-file", "authentication-config": "authentication-config",
		"authorization-mode": "authorization-mode", "service-account-issuer": "service-account-issuer",
		"api-audiences": "api-audiences", "audit-policy-file": "audit-policy-file", "audit-log-path": "audit-log-path",
		"audit-log-maxsize": "audit-log-maxsize", "audit-log-maxbackup": "audit-log-maxbackup", "audit-log-maxage": "audit-log-maxage",
		"encryption-provider-config": "encryption-provider-config", "disable-admission-plugins": "disable-admission-plugins",
		"anonymous-auth": "anonymous-auth", "oidc-issuer-url": "oidc-issuer-url", "oidc-client-id": "oidc-client-id",
		"oidc-ca-file": "oidc-ca-file", "oidc-username-claim": "oidc-username-claim", "oidc-username-prefix": "oidc-username-prefix",
		"oidc-groups-claim": "oidc-groups-claim", "oidc-groups-prefix": "oidc-groups-prefix",
		"oidc-required-claim": "oidc-required-claim", "oidc-signing-algs": "oidc-signing-algs",
	}},
	"kube-controller-manager-arg": {"kube-controller-manager", map[string]string{
		"cluster-cidr": "cluster-cidr", "node-cidr-mask-size": "node-cidr-mask-size",
		"node-monitor-grace-period": "node-monitor-grace-period", "terminated-pod-gc-threshold": "terminated-pod-gc-threshold",
		"cluster-signing-duration": "node-cert-validity", "leader-elect": "leader-elect",
	}},
	"kube-scheduler-arg": {"kube-scheduler", map[string]string{
		"config": "scheduler-config", "leader-elect": "leader-elect",
	}},
}

// addPassthroughFlags gives cmd the --<component>-arg flags of the
// components it runs.
func addPassthroughFlags(cmd *cobra.Command, flags ...string) {
	for _, name := range flags {
		p := passthroughs[name]
		cmd.Flags().StringSlice(name, nil, fmt.Sprintf("%s's flag as name=value, for the skiff flag that does the same (repeatable; one of: %s)",
			p.component, strings.Join(slices.Sorted(maps.Keys(p.flags)), ", ")))
	}
}

// applyPassthroughs sets the skiff flags the --<component>-arg values of
// cmd name. A value whose skiff flag is also given, directly or by another
// passthrough with another value, is refused.
func applyPassthroughs(cmd *cobra.Command) error {
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { given[f.Name] = true })
	set := map[string]string{} // skiff flag → value a passthrough gave
	for _, name := range slices.Sorted(maps.Keys(passthroughs)) {
		values, err := cmd.Flags().GetStringSlice(name)
		if err != nil {
			continue // not a flag of cmd
		}
		for _, v := range values {
			if err := applyPassthrough(cmd, name, v, given, set); err != nil {
				return fmt.Errorf("--%s %q: %w", name, v, err)
			}
		}
	}
	return nil
}

func applyPassthrough(cmd *cobra.Command, name, v string, given map[string]bool, set map[string]string) error {
	p := passthroughs[name]
	upstream, value, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want name=value, a flag of %s", p.component)
	}
	upstream = strings.TrimPrefix(upstream, "--")
	target, ok := p.flags[upstream]
	if !ok || cmd.Flags().Lookup(target) == nil {
		return fmt.Errorf("skiff %s has nothing that does %s's --%s", cmd.Name(), p.component, upstream)
	}
	if given[target] {
		return fmt.Errorf("--%s is given too", target)
	}
	if prev, ok := set[target]; ok && prev != value {
		return fmt.Errorf("another passthrough sets --%s to %q", target, prev)
	}
	set[target] = value
	if err := cmd.Flags().Set(target, value); err != nil {
		return fmt.Errorf("--%s: %w", target, err)
	}
	return nil
}
