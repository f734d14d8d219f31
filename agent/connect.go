package agent

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/agent/join"
	"github.com/skiff-lab/skiff/agent/serverlb"
)

// connect sets cfg.REST, unless it is set or neither cfg.Server nor
// cfg.Kubeconfig names a server: the credentials in cfg.Kubeconfig, after
// joining the cluster at cfg.Server with cfg.Token if it holds none valid.
// With cfg.BalanceServers the API servers are reached through a local load
// balancer, told of the cluster's servers until ctx ends. A node that
// joined with a token gets its certificates rotated (joinedNode).
func (cfg *Config) connect(ctx context.Context) error {
	if cfg.REST != nil || cfg.Server == "" && cfg.Kubeconfig == "" {
		return nil
	}
	pki := cfg.dir("pki")
	if cfg.Token != "" {
		err := untilReachable(ctx, clock.RealClock{}, "join", func() error {
			return join.Credentials(ctx, join.Config{Server: cfg.Server, Token: cfg.Token, NodeName: cfg.NodeName, PKIDir: pki, Kubeconfig: cfg.Kubeconfig})
		})
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags(cfg.Server, cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	var lb *serverlb.Balancer
	if cfg.BalanceServers {
		if lb, err = balanceServers(ctx, rc, cfg.dir("servers.json")); err != nil {
			return err
		}
	}
	cfg.REST = rc
	if join.Joined(pki) {
		if err := cfg.joinedNode(ctx, pki); err != nil {
			return err
		}
	}
	if lb != nil {
		go serverlb.Watch(ctx, kubernetes.NewForConfigOrDie(cfg.REST), lb)
	}
	return nil
}

// balanceServers points rc at a local load balancer of the cluster's API
// servers: rc's own, then every server the cluster lists, kept in state;
// it uses one whose /readyz passes.
func balanceServers(ctx context.Context, rc *rest.Config, state string) (*serverlb.Balancer, error) {
	u, err := url.Parse(rc.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the API server's URL %q: %v", rc.Host, err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	check, err := readyCheck(rc)
	if err != nil {
		return nil, fmt.Errorf("API server load balancer: %w", err)
	}
	lb, err := serverlb.Start(ctx, host, state, check)
	if err != nil {
		return nil, fmt.Errorf("API server load balancer: %w", err)
	}
	rc.Host = "https://" + lb.Addr()
	return lb, nil
}

// readyCheck checks a server's /readyz with rc's trust (not its
// credentials: /readyz is open), verifying the name the clients verify
// through the balancer: 127.0.0.1, which every server's certificate holds.
func readyCheck(rc *rest.Config) (serverlb.Check, error) {
	opts := rest.TLSClientConfig{Insecure: rc.Insecure, CAFile: rc.CAFile, CAData: rc.CAData, ServerName: rc.ServerName}
	if opts.ServerName == "" && !opts.Insecure {
		opts.ServerName = "127.0.0.1"
	}
	tlsConfig, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: opts})
	if err != nil {
		return nil, err
	}
	return serverlb.Ready(tlsConfig), nil
}

// joinedNode sets up a node that joined with a token (its keys in pki):
// its client certificate renewed as it ages, the cluster CA its node API
// checks clients against, and, without TLSCertFile, its serving
// certificate through the CSR API.
func (cfg *Config) joinedNode(ctx context.Context, pki string) error {
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	rc, err := join.RotatingClient(ctx, cfg.REST, cfg.NodeName, pki)
	if err != nil {
		return err
	}
	cfg.REST, cfg.ClientCA = rc, ca
	if cfg.TLSCertFile == "" {
		cfg.ServingCert = join.Serving(ctx, rc, cfg.NodeName, pki, 0)
	}
	return nil
}
