package agent

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTeardownRemovesARunningNode: an agent stopped under a running pod
// (as `systemctl stop` leaves it with KillMode=process) is torn down as
// `skiff uninstall` does: containers, sandbox, network namespace, bridge,
// cgroups and containerd go, and nodetest then finds nothing left.
func TestTeardownRemovesARunningNode(t *testing.T) {
	n := startTestNode(t)
	n.createPod(webPod("web"))
	n.waitPod("default", "web", "web running", 90*time.Second, running)
	n.stop()

	var found []string
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := Teardown(ctx, n.cfg, func(what string) { found = append(found, what) }); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	want := []string{"container web of pod default/web", "sandbox", "network namespace "}
	for _, w := range want {
		if !slices.ContainsFunc(found, func(f string) bool { return strings.Contains(f, w) }) {
			t.Errorf("Teardown found %q, want %q among them", found, w)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + n.cfg.Bridge); !os.IsNotExist(err) {
		t.Errorf("bridge %s still there: %v", n.cfg.Bridge, err)
	}
	if err := Teardown(ctx, n.cfg, func(what string) { t.Errorf("second teardown found %s", what) }); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
}
