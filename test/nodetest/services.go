package nodetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-iptables/iptables"

	"github.com/skiff-lab/skiff/dns"
	"github.com/skiff-lab/skiff/proxy"
)

// GuardServiceTraffic makes sure no test traffic to cidrs (the service
// and cluster CIDRs) leaves the machine: without a proxy rule a pod's
// packet to a cluster IP would follow the default route off it. Sent from
// the host (OUTPUT) or from pods (FORWARD), such traffic is rejected
// unless it goes to the node's bridge, or to lo: the host's own traffic to
// a node port on 127.0.0.1, whose real route is chosen only after the
// proxy's DNAT, or to an address on the node. Whatever still heads
// elsewhere is dropped on its way out (mangle POSTROUTING, which sees the
// real route). The rules go when the test ends.
func (n Node) GuardServiceTraffic(t testing.TB, cidrs ...string) {
	t.Helper()
	ipt, err := iptables.New()
	if err != nil {
		t.Fatal(err)
	}
	chain := "SKIFF-GUARD-" + n.Bridge
	var undo []func() error
	t.Cleanup(func() {
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](); err != nil {
				t.Errorf("remove guard: %v", err)
			}
		}
	})
	for table, final := range map[string]string{"filter": "REJECT", "mangle": "DROP"} {
		if err := ipt.ClearChain(table, chain); err != nil {
			t.Fatal(err)
		}
		undo = append(undo, func() error { return ipt.ClearAndDeleteChain(table, chain) })
		for _, r := range [][]string{{"-o", n.Bridge, "-j", "RETURN"}, {"-o", "lo", "-j", "RETURN"}, {"-j", final}} {
			if err := ipt.Append(table, chain, r...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, cidr := range cidrs {
		for _, at := range [][2]string{{"filter", "OUTPUT"}, {"filter", "FORWARD"}, {"mangle", "POSTROUTING"}} {
			rule := []string{"-d", cidr, "-j", chain}
			if err := ipt.Insert(at[0], at[1], 1, rule...); err != nil {
				t.Fatalf("guard in %s %s: %v", at[0], at[1], err)
			}
			undo = append(undo, func() error { return ipt.DeleteIfExists(at[0], at[1], rule...) })
		}
	}
}

// ClusterDNS is the cluster DNS address of a node on the default service
// CIDR.
const ClusterDNS = "10.96.0.10"

// CleanServices removes the service proxy's chains and rules and the
// cluster DNS address, as `skiff agent --cleanup` does, and reports any
// KUBE- chain left after it. Only tests that run a node's services in the
// machine's own network namespace call it; they must not run beside each
// other.
func CleanServices(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proxy.Cleanup(ctx); err != nil {
		t.Errorf("proxy cleanup: %v", err)
	}
	if err := dns.Unbind(ClusterDNS); err != nil {
		t.Errorf("cluster DNS address: %v", err)
	}
	ipt, err := iptables.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"nat", "filter"} {
		chains, err := ipt.ListChains(table)
		if err != nil {
			t.Errorf("list %s chains: %v", table, err)
		}
		for _, c := range chains {
			if strings.HasPrefix(c, "KUBE-") {
				t.Errorf("%s chain %s left after cleanup", table, c)
			}
		}
	}
}
