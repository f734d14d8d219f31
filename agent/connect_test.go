package agent

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestConnect: without REST, the agent's client comes from its kubeconfig,
// --server over the kubeconfig's URL; with REST, or with neither, nothing
// is read.
func TestConnect(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "agent.kubeconfig")
	file := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://10.0.0.1:6443}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	if err := os.WriteFile(kubeconfig, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	given := &rest.Config{Host: "https://given:6443"}
	for _, tt := range []struct {
		name string
		cfg  Config
		want string // REST's host; "" no REST
	}{
		{"kubeconfig", Config{Kubeconfig: kubeconfig}, "https://10.0.0.1:6443"},
		{"server over the kubeconfig's", Config{Kubeconfig: kubeconfig, Server: "https://10.0.0.2:6443"}, "https://10.0.0.2:6443"},
		{"REST given", Config{REST: given, Kubeconfig: kubeconfig}, given.Host},
		{"nothing", Config{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.DataDir = dir
			if err := cfg.connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := cfg.REST; tt.want == "" && got != nil || tt.want != "" && (got == nil || got.Host != tt.want) {
				t.Errorf("REST %+v, want host %q", got, tt.want)
			}
		})
	}
}

// TestReadyCheck: the balancer's check passes a real server, whose
// certificate it verifies for 127.0.0.1 as the clients through the
// balancer do.
func TestReadyCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts etcd and the API server")
	}
	rc := servertest.Start(t).RESTConfig()
	check, err := readyCheck(rc)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t.Context(), u.Host); err != nil {
		t.Errorf("a ready server: %v", err)
	}
	other := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: rc.CAData, ServerName: "elsewhere.example"}}
	if check, err := readyCheck(other); err != nil || check(t.Context(), u.Host) == nil {
		t.Errorf("a server checked for another name passed (%v)", err)
	}
}

// TestBalanceServers: the client dials the local balancer, which starts
// at the server it was given (port 443 when the URL names none).
func TestBalanceServers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc := &rest.Config{Host: "https://127.0.0.9"}
	lb, err := balanceServers(ctx, rc, filepath.Join(t.TempDir(), "servers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://"+lb.Addr() || !strings.HasPrefix(lb.Addr(), "127.0.0.1:") {
		t.Errorf("client host %s, balancer %s", rc.Host, lb.Addr())
	}
	if servers := lb.Servers(); len(servers) == 0 || servers[0] != "127.0.0.9:443" {
		t.Errorf("servers %v, want 127.0.0.9:443 first", servers)
	}
	if _, err := balanceServers(ctx, &rest.Config{Host: "127.0.0.9"}, ""); err == nil {
		t.Error("a URL without a host was taken")
	}
}
