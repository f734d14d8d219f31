package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/podtrace"
)

// TestPrintExplanation: the timeline, the nodes' verdicts, JSON and YAML,
// and a refusal of another format.
func TestPrintExplanation(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	e := podtrace.Explain(pendingPod(), podtrace.Journey{Steps: []podtrace.Step{
		{Name: "apiserver.create", Component: "apiserver", Start: t0, End: t0.Add(4 * time.Millisecond)},
		{Name: "scheduler.schedule", Component: "scheduler", Start: t0.Add(5 * time.Millisecond), End: t0.Add(6 * time.Millisecond),
			Error: "0/1 nodes are available: 1 Insufficient cpu.", Attrs: map[string]string{podtrace.AttrWhyNot + "node-1": "NodeResourcesFit: Insufficient cpu"}},
	}})
	for _, c := range []struct {
		output string
		whyNot bool
		want   []string
	}{
		{"", false, []string{"Pod shop/big (uid u1)", "apiserver.create", "error: 0/1 nodes are available"}},
		{"", true, []string{"Pod shop/big is not scheduled.", "  node-1: NodeResourcesFit: Insufficient cpu\n"}},
		{"json", false, []string{`"kind": "PodExplanation"`, `"whyNot": {`, `"node-1": "NodeResourcesFit: Insufficient cpu"`}},
		{"yaml", false, []string{"kind: PodExplanation", "whyNot:\n  node-1: 'NodeResourcesFit: Insufficient cpu'"}},
	} {
		var out bytes.Buffer
		if err := printExplanation(&out, e, c.output, c.whyNot); err != nil {
			t.Fatalf("-o %q --why-not=%v: %v", c.output, c.whyNot, err)
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("-o %q --why-not=%v: no %q in\n%s", c.output, c.whyNot, want, out.String())
			}
		}
	}
	if err := printExplanation(&bytes.Buffer{}, e, "wide", false); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("-o wide: %v, want an error naming --output", err)
	}
}

func pendingPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "shop", UID: "u1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
}
