package podtrace

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Explanation is what pods/explain answers: the pod's journey so far,
// where it stands, and, while no node will take it, each node's verdict
// from the scheduler's last attempt.
type Explanation struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Journey    `json:",inline"`
	Phase      corev1.PodPhase `json:"phase,omitempty"`
	Node       string          `json:"node,omitempty"`
	// Deleted says the pod is gone: the journey is what the server kept.
	Deleted bool `json:"deleted,omitempty"`
	// Unschedulable is the scheduler's last word on a pod it cannot
	// place (its PodScheduled condition's message).
	Unschedulable string `json:"unschedulable,omitempty"`
	// WhyNot maps each node to why the scheduler's last attempt did not
	// choose it.
	WhyNot map[string]string `json:"whyNot,omitempty"`
}

// ExplanationKind and ExplanationAPIVersion identify an Explanation.
const (
	ExplanationKind       = "PodExplanation"
	ExplanationAPIVersion = "skiff.io/v1alpha1"
)

// Explain puts the pod's journey (empty if none was recorded) together
// with where the pod stands. The nodes' verdicts move from the failed
// scheduling step into WhyNot, and are kept only while the pod waits
// for a node.
func Explain(pod *corev1.Pod, j Journey) Explanation {
	e := Explanation{Kind: ExplanationKind, APIVersion: ExplanationAPIVersion, Journey: j,
		Phase: pod.Status.Phase, Node: pod.Spec.NodeName}
	e.UID, e.Namespace, e.Name = string(pod.UID), pod.Namespace, pod.Name
	if e.Steps == nil {
		e.Steps = []Step{}
	}
	for i, s := range e.Steps {
		whyNot := map[string]string{}
		for k, v := range s.Attrs {
			if node, ok := strings.CutPrefix(k, AttrWhyNot); ok {
				whyNot[node] = v
			}
		}
		if len(whyNot) == 0 {
			continue
		}
		e.Steps[i].Attrs = maps.Clone(s.Attrs)
		maps.DeleteFunc(e.Steps[i].Attrs, func(k, _ string) bool { return strings.HasPrefix(k, AttrWhyNot) })
		if pod.Spec.NodeName == "" {
			e.WhyNot = whyNot
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && pod.Spec.NodeName == "" {
			e.Unschedulable = c.Message
		}
	}
	return e
}

// ExplainDeleted is the explanation of a pod that is gone: its journey
// as the server kept it.
func ExplainDeleted(j Journey) Explanation {
	e := Explanation{Kind: ExplanationKind, APIVersion: ExplanationAPIVersion, Journey: j, Deleted: true}
	if e.Steps == nil {
		e.Steps = []Step{}
	}
	return e
}

// WriteWhyNot prints why the pod is not on a node: the scheduler's last
// verdict, then each node's reasons, one node per line.
func WriteWhyNot(w io.Writer, e Explanation) error {
	switch {
	case e.Node != "":
		_, err := fmt.Fprintf(w, "Pod %s/%s is scheduled, on node %s.\n", e.Namespace, e.Name, e.Node)
		return err
	case e.Unschedulable == "" && len(e.WhyNot) == 0:
		_, err := fmt.Fprintf(w, "Pod %s/%s waits for the scheduler: no attempt has failed yet.\n", e.Namespace, e.Name)
		return err
	}
	fmt.Fprintf(w, "Pod %s/%s is not scheduled.", e.Namespace, e.Name)
	if e.Unschedulable != "" {
		fmt.Fprintf(w, " %s", e.Unschedulable)
	}
	fmt.Fprintln(w)
	for _, node := range slices.Sorted(maps.Keys(e.WhyNot)) {
		fmt.Fprintf(w, "  %s: %s\n", node, e.WhyNot[node])
	}
	return nil
}
