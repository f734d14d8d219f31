package agent

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/podtrace"
)

// TestStartTraces: a pending pod is traced from the watch until its Ready
// condition is written. Its first status past Pending logs one line with
// every step; the steps of its journey reach the tracer, each beginning
// where the one before ended (the network alongside the sandbox); a pod
// seen already running is not traced.
func TestStartTraces(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))

	store := podtrace.NewStore(10)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(podtrace.Exporter{Store: store}))
	s := newStartTraces()
	s.tracer = podtrace.NewTracer(tp, "agent", "node-1")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec:   v1.PodSpec{InitContainers: []v1.Container{{Name: "setup"}}},
		Status: v1.PodStatus{Phase: v1.PodPending}}
	ctx, root := tp.Tracer("test").Start(context.Background(), "apiserver.create")
	podtrace.Inject(ctx, pod, podtrace.Annotation)
	root.End()

	s.seen(pod)
	if s.mark(pod.UID, stepSynced) {
		s.step(pod.UID, "agent.queue", nil)
	}
	if s.mark(pod.UID, stepSynced) {
		t.Error("the first sync was marked twice")
	}
	s.step(pod.UID, "agent.volumes", nil)
	s.span(pod.UID, "agent.network", time.Now(), time.Now(), nil)
	for _, step := range []startStep{stepNetwork, stepPause, stepSandbox} {
		s.mark(pod.UID, step)
	}
	s.step(pod.UID, "agent.sandbox", nil)
	s.step(pod.UID, "agent.container", nil)
	exited := podState{containers: map[string][]cri.Container{"setup": {{Name: "setup", State: cri.StateExited, FinishedAt: time.Now()}}}}
	s.observed(pod, exited)
	s.observed(pod, exited) // once only
	s.step(pod.UID, "agent.container", nil)
	s.mark(pod.UID, stepContainers)

	s.reported(pod)
	running := pod.DeepCopy()
	running.Status.Phase = v1.PodRunning
	s.reported(running)
	line := log.String()
	for _, want := range []string{`msg="pod started"`, "pod=web", "namespace=ns", "queued=", "sandbox=", "network=", "pause=", "containers=", "status=", "total="} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	if len(s.traces) != 1 {
		t.Fatal("the trace ended before the pod was Ready")
	}
	ready := running.DeepCopy()
	ready.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	s.reported(ready)
	if len(s.traces) != 0 {
		t.Errorf("trace kept after the pod was Ready")
	}

	j, _ := store.Get("u1")
	var names []string
	var agentSteps []podtrace.Step
	for _, st := range j.Steps {
		names = append(names, st.Name)
		if st.Component == "agent" && st.Name != "agent.network" {
			agentSteps = append(agentSteps, st)
		}
	}
	want := []string{"agent.queue", "agent.volumes", "agent.sandbox", "agent.network", "agent.container", "agent.init.run", "agent.container", "agent.ready"}
	if !slices.Equal(names, want) {
		t.Errorf("journey %v, want %v", names, want)
	}
	for i := 1; i < len(agentSteps); i++ {
		if !agentSteps[i].Start.Equal(agentSteps[i-1].End) {
			t.Errorf("%s begins at %v, not where %s ended (%v)", agentSteps[i].Name, agentSteps[i].Start, agentSteps[i-1].Name, agentSteps[i-1].End)
		}
	}
	if j.Steps[0].Node != "node-1" {
		t.Errorf("agent step on node %q, want node-1", j.Steps[0].Node)
	}

	adopted := pod.DeepCopy()
	adopted.UID, adopted.Status.Phase = "u2", v1.PodRunning
	s.seen(adopted)
	if len(s.traces) != 0 {
		t.Errorf("a running pod (adopted after a restart) was traced")
	}
}
