package agent

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStartTraces: a pending pod is traced from the watch to its first
// status past Pending, which logs one line with every step and ends the
// trace; a pod seen already running is not traced.
func TestStartTraces(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))

	s := newStartTraces()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}, Status: v1.PodStatus{Phase: v1.PodPending}}
	s.seen(pod)
	for _, step := range []startStep{stepSynced, stepNetwork, stepPause, stepSandbox, stepContainers} {
		s.mark(pod.UID, step)
	}
	s.reported(pod, v1.PodPending)
	if len(s.traces) != 1 || log.Len() != 0 {
		t.Fatalf("a Pending report ended the trace (%d traces, log %q)", len(s.traces), log.String())
	}
	s.reported(pod, v1.PodRunning)
	line := log.String()
	for _, want := range []string{`msg="pod started"`, "pod=web", "namespace=ns", "queued=", "sandbox=", "network=", "pause=", "containers=", "status=", "total="} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	if len(s.traces) != 0 {
		t.Errorf("trace kept after the pod started")
	}

	running := pod.DeepCopy()
	running.UID, running.Status.Phase = "u2", v1.PodRunning
	s.seen(running)
	if len(s.traces) != 0 {
		t.Errorf("a running pod (adopted after a restart) was traced")
	}
}
