package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/coreos/go-iptables/iptables"
)

// jump is a rule in a built-in chain that sends traffic to one of ours.
type jump struct {
	table, chain string
	rule         []string
}

// jumps are kube-proxy's entry points, each placed first in its chain.
var jumps = []jump{
	{"nat", "PREROUTING", []string{"-m", "comment", "--comment", "kubernetes service portals", "-j", chainServices}},
	{"nat", "OUTPUT", []string{"-m", "comment", "--comment", "kubernetes service portals", "-j", chainServices}},
	{"nat", "POSTROUTING", []string{"-m", "comment", "--comment", "kubernetes postrouting rules", "-j", chainPostrouting}},
	{"filter", "INPUT", []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "kubernetes externally-visible service portals", "-j", chainExternalServices}},
	{"filter", "INPUT", []string{"-j", chainFirewall}},
	{"filter", "FORWARD", []string{"-m", "comment", "--comment", "kubernetes forwarding rules", "-j", chainForward}},
	{"filter", "FORWARD", []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "kubernetes service portals", "-j", chainServices}},
	{"filter", "FORWARD", []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "kubernetes externally-visible service portals", "-j", chainExternalServices}},
	{"filter", "OUTPUT", []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "kubernetes service portals", "-j", chainServices}},
	{"filter", "OUTPUT", []string{"-j", chainFirewall}},
}

// sysctls the rules rely on beyond a node's (package host: forwarding,
// bridged traffic through iptables): 127.0.0.1 node ports
// (route_localnet, guarded by KUBE-FIREWALL).
var sysctls = map[string]string{
	"net/ipv4/conf/all/route_localnet": "1",
}

// kernel applies rules with the iptables tools; the proxier's only I/O
// besides conntrack.
type kernel struct{}

// ensureBase makes the top-level chains and the jumps to them exist, and
// sets the sysctls. Idempotent.
func (kernel) ensureBase() error {
	for key, v := range sysctls {
		if err := os.WriteFile("/proc/sys/"+key, []byte(v), 0o644); err != nil {
			return fmt.Errorf("sysctl %s: %w", key, err)
		}
	}
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	for _, j := range jumps {
		target := j.rule[len(j.rule)-1]
		if ok, err := ipt.ChainExists(j.table, target); err != nil {
			return fmt.Errorf("chain %s: %w", target, err)
		} else if !ok {
			if err := ipt.NewChain(j.table, target); err != nil {
				return fmt.Errorf("create chain %s: %w", target, err)
			}
		}
		if err := ipt.InsertUnique(j.table, j.chain, 1, j.rule...); err != nil {
			return fmt.Errorf("jump from %s to %s: %w", j.chain, target, err)
		}
	}
	return nil
}

// restore applies payload with one iptables-restore --noflush: chains it
// declares are rewritten, everything else stays as it is. What the payload
// lists (see listAll) is discarded; errors come on stderr.
func (kernel) restore(ctx context.Context, payload []byte) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
	cmd.Stdin, cmd.Stderr = bytes.NewReader(payload), &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("iptables-restore: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// serviceChains returns the per-service chains (KUBE-SVC-, KUBE-SVL-,
// KUBE-EXT-, KUBE-SEP-) in the nat table, so that a full sync deletes
// those it no longer uses, a restarted proxy's included.
func (kernel) serviceChains(ctx context.Context) (map[string]bool, error) {
	chains, err := listChains(ctx, "nat")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range chains {
		for _, p := range []string{prefixService, prefixLocalService, prefixExternal, prefixEndpoint} {
			if strings.HasPrefix(c, p) {
				out[c] = true
			}
		}
	}
	return out, nil
}

// listChains returns the chains of table as iptables-save lists them.
func listChains(ctx context.Context, table string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", table).Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save -t %s: %w", table, err)
	}
	var chains []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, ":") {
			chains = append(chains, strings.Fields(line[1:])[0])
		}
	}
	return chains, sc.Err()
}

// Cleanup removes every chain and rule the proxy made: the jumps from the
// built-in chains, then all KUBE- chains of the nat and filter tables, in
// one iptables-restore. What is already gone is done.
func Cleanup(ctx context.Context) error {
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	for _, j := range jumps {
		target := j.rule[len(j.rule)-1]
		if ok, err := ipt.ChainExists(j.table, target); err != nil || !ok {
			continue
		}
		if err := ipt.DeleteIfExists(j.table, j.chain, j.rule...); err != nil {
			return fmt.Errorf("delete jump to %s: %w", target, err)
		}
	}
	var payload bytes.Buffer
	for _, name := range []string{"nat", "filter"} {
		chains, err := listChains(ctx, name)
		if err != nil {
			return err
		}
		var t table
		for _, c := range chains {
			if strings.HasPrefix(c, "KUBE-") {
				t.declare(c)
				t.deletes.WriteString("-X " + c + "\n")
			}
		}
		t.write(&payload, name, true)
	}
	return kernel{}.restore(ctx, payload.Bytes())
}
