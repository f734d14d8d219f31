package cni

import (
	"strings"
	"testing"
)

func TestMasquerade(t *testing.T) {
	e := newEnv(t)
	cidr, cluster := e.cidr.String(), "10.250.0.0/16"
	for range 2 { // idempotent: one rule, one jump
		if err := e.n.EnsureMasquerade(cidr, cluster); err != nil {
			t.Fatal(err)
		}
	}
	saved := e.iptablesSave()
	chain := e.n.masqChain()
	if got := strings.Count(saved, "-A "+chain+" -s "+cidr+" ! -d "+cluster); got != 1 {
		t.Errorf("%d masquerade rules for %s, want 1:\n%s", got, cidr, saved)
	}
	if got := strings.Count(saved, "-A POSTROUTING -m comment --comment \"skiff pods on "+e.cfg.Bridge+"\" -j "+chain); got != 1 {
		t.Errorf("%d jumps to %s, want 1", got, chain)
	}
	if err := e.n.RemoveMasquerade(); err != nil {
		t.Fatal(err)
	}
	if err := e.n.RemoveMasquerade(); err != nil {
		t.Fatalf("second removal: %v", err)
	}
	if strings.Contains(e.iptablesSave(), chain) {
		t.Errorf("%s left behind", chain)
	}
}
