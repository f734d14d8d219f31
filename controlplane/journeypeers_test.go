package controlplane_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestJourneysAcrossServers runs two servers of one cluster (one etcd,
// one CA, on 127.0.0.1 and 127.0.0.2). A pod created through the second,
// scheduled by whichever leads, whose node reports to the first, has its
// whole journey on both: each server forwards the steps it takes to the
// other. The first restarted (its journeys were in memory), it reads
// them back from the second.
func TestJourneysAcrossServers(t *testing.T) {
	endpoint := servertest.StartEtcd(t)
	first := servertest.StartWith(t, endpoint.External)
	second := servertest.StartWith(t, func(c *controlplane.Config) {
		endpoint.External(c)
		c.BindAddress = "127.0.0.2"
		shareCA(t, first.Config.DataDir, c.DataDir)
	})
	pod := scheduledOnJourneyNodes(t, second.Client(), "across")
	reportAgentStep(t, first.UserConfig("system:node:node-a", "system:nodes"), pod)

	for _, s := range []*servertest.Server{first, second} {
		waitWholeJourney(t, s, "across")
	}

	// Restarted, a server reads the journeys the other kept.
	first.Restart()
	waitWholeJourney(t, first, "across")
}

// waitWholeJourney waits until s explains pod from its creation and
// scheduling to a node's step.
func waitWholeJourney(t *testing.T, s *servertest.Server, pod string) {
	t.Helper()
	want := []string{"apiserver.create", "scheduler.schedule", "agent.sandbox"}
	servertest.Eventually(t, "the whole journey through "+s.Config.BindAddress, 30*time.Second, func(context.Context) (bool, string) {
		got := explain(t, s.Client(), pod).StepNames()
		return !slices.ContainsFunc(want, func(step string) bool { return !slices.Contains(got, step) }), strings.Join(got, " ")
	})
}

// shareCA copies the cluster CA and the service account key of the server
// in dir to the one in into, as a server that joins receives them.
func shareCA(t *testing.T, dir, into string) {
	t.Helper()
	for _, f := range []string{"ca.crt", "ca.key", "service-account.key"} {
		data, err := os.ReadFile(filepath.Join(dir, "server", "tls", f))
		if err == nil {
			err = os.MkdirAll(filepath.Join(into, "server", "tls"), 0o700)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(into, "server", "tls", f), data, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
