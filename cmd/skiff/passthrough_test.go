package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// parsed is skiff's command for args, its flags parsed and its config,
// environment and passthroughs applied as before a run.
func parsed(t *testing.T, args ...string) (*cobra.Command, error) {
	t.Helper()
	cmd, rest, err := rootCommand().Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	if err := applyConfig(cmd, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	return cmd, applyPassthroughs(cmd)
}

func TestPassthroughs(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(config, []byte("kube-proxy-arg: [iptables-min-sync-period=3s]\n"), 0o600)
	cmd, err := parsed(t, "server", "--config", config, "--kubelet-arg", "max-pods=50", "--kubelet-arg", `"node-labels=a=b,c=d"`,
		"--kube-apiserver-arg", "--service-node-port-range=31000-31999", "--kube-scheduler-arg", "config=/etc/sched.yaml",
		"--kube-controller-manager-arg", "leader-elect=false", "--kube-scheduler-arg", "leader-elect=false")
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"max-pods": "50", "node-labels": "[a=b,c=d]", "service-node-port-range": "31000-31999",
		"scheduler-config": "/etc/sched.yaml", "leader-elect": "false", "proxy-min-sync-period": "3s"} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--kubelet-arg", "image-gc-high-threshold=85"}, `--kubelet-arg "image-gc-high-threshold=85": skiff agent has nothing that does the kubelet's --image-gc-high-threshold`},
		{[]string{"agent", "--kubelet-arg", "max-pods"}, "want name=value"},
		{[]string{"agent", "--kubelet-arg", "max-pods=many"}, `--kubelet-arg "max-pods=many": --max-pods: `},
		{[]string{"agent", "--max-pods", "20", "--kubelet-arg", "max-pods=30"}, "--max-pods is given too"},
		{[]string{"server", "--kube-controller-manager-arg", "leader-elect=false", "--kube-scheduler-arg", "leader-elect=true"}, `another passthrough sets --leader-elect to "false"`},
	} {
		if _, err := parsed(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	if cmd, _ := parsed(t, "agent"); cmd.Flags().Lookup("kube-apiserver-arg") != nil {
		t.Error("skiff agent has --kube-apiserver-arg")
	}
}

// TestPassthroughTargets: every skiff flag a passthrough names exists, on
// the server at least.
func TestPassthroughTargets(t *testing.T) {
	server, _ := parsed(t, "server")
	for name, p := range passthroughs {
		for _, upstream := range slices.Sorted(maps.Keys(p.flags)) {
			if server.Flags().Lookup(p.flags[upstream]) == nil {
				t.Errorf("--%s %s= maps to --%s, which skiff server does not have", name, upstream, p.flags[upstream])
			}
		}
	}
}
