package cni

import (
	"fmt"

	"github.com/coreos/go-iptables/iptables"
)

// Pods reach beyond their node through one masquerade rule per node, kept in
// a nat chain of the agent's own, instead of the bridge plugin's ipMasq,
// which adds a chain and rules per pod (and makes every iptables call slower
// as pods accumulate).

// masqChain is this network's nat chain; named after the bridge, so that
// several agents on one machine (tests) keep apart. At most 26 characters.
func (n *Network) masqChain() string { return "SKIFF-MASQ-" + n.cfg.Bridge }

// masqJump is the POSTROUTING rule that sends traffic to masqChain.
func (n *Network) masqJump() []string {
	return []string{"-m", "comment", "--comment", "skiff pods on " + n.cfg.Bridge, "-j", n.masqChain()}
}

// EnsureMasquerade makes traffic from podCIDR (this node's pods) to
// outside clusterCIDR (every node's pods) leave with the node's address;
// traffic to other pods keeps its source. Idempotent: the chain is
// rewritten, the jump added once.
func (n *Network) EnsureMasquerade(podCIDR, clusterCIDR string) error {
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	chain := n.masqChain()
	if err := ipt.ClearChain("nat", chain); err != nil {
		return fmt.Errorf("create chain %s: %w", chain, err)
	}
	rule := []string{"-s", podCIDR, "!", "-d", clusterCIDR, "-m", "comment", "--comment", "skiff pod masquerade", "-j", "MASQUERADE"}
	if err := ipt.Append("nat", chain, rule...); err != nil {
		return fmt.Errorf("masquerade rule: %w", err)
	}
	if err := ipt.AppendUnique("nat", "POSTROUTING", n.masqJump()...); err != nil {
		return fmt.Errorf("jump to %s: %w", chain, err)
	}
	return nil
}

// RemoveMasquerade deletes the network's masquerade rule and chain, for a
// node being taken down. Missing ones are done.
func (n *Network) RemoveMasquerade() error {
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("iptables: %w", err)
	}
	exists, err := ipt.ChainExists("nat", n.masqChain())
	if err != nil || !exists {
		return err // the jump cannot exist without its chain
	}
	if err := ipt.DeleteIfExists("nat", "POSTROUTING", n.masqJump()...); err != nil {
		return fmt.Errorf("delete jump: %w", err)
	}
	return ipt.ClearAndDeleteChain("nat", n.masqChain())
}
