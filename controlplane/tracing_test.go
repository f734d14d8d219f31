package controlplane

import (
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/pki"
)

// TestStartTracingRefusesBadFlags: a sampling rate outside 0..1 and an
// endpoint that is not an http(s) URL are refused, naming the flag.
func TestStartTracingRefusesBadFlags(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    Tracing
		flag string
	}{
		{Tracing{SamplingRate: 2}, "--tracing-sampling-rate"},
		{Tracing{SamplingRate: -0.5}, "--tracing-sampling-rate"},
		{Tracing{SamplingRate: 1, Endpoint: "collector:4318"}, "--tracing-endpoint"},
	} {
		if _, err := startTracing(c.t, ca); err == nil || !strings.HasPrefix(err.Error(), c.flag) {
			t.Errorf("%+v: %v, want an error naming %s", c.t, err, c.flag)
		}
	}
	tr, err := startTracing(Tracing{SamplingRate: 0.5}, ca)
	if err != nil || tr.journeys == nil || tr.peers == nil {
		t.Fatalf("a good configuration: %v", err)
	}
	tr.shutdown()
}
