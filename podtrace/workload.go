package podtrace

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Workload is what `skiff explain` shows of a Deployment, Job,
// StatefulSet or DaemonSet: where it stands, and each of its pods'
// explanations.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Status is the controller's own count, in words ("2 of 3 ready").
	Status string        `json:"status"`
	Pods   []Explanation `json:"pods"`
}

// ReadyStep is the last step of a pod's start: the agent reported it
// Ready.
const ReadyStep = "agent.ready"

// Ready says the pod's journey reached Ready.
func (e Explanation) Ready() bool {
	return slices.ContainsFunc(e.Steps, func(s Step) bool { return s.Name == ReadyStep && s.Error == "" })
}

// Where says where the pod stands, in a word or two: its last step, or
// what keeps it from one.
func (e Explanation) Where() string {
	switch {
	case e.Deleted:
		return "deleted"
	case e.Unschedulable != "":
		return "unschedulable"
	case len(e.Steps) == 0:
		return "no steps recorded"
	}
	last := e.Steps[len(e.Steps)-1]
	if last.Error != "" {
		return last.Name + " failed"
	}
	return last.Name
}

// Slowest is the pod's longest step (false when it has none).
func (e Explanation) Slowest() (Step, bool) {
	if len(e.Steps) == 0 {
		return Step{}, false
	}
	return slices.MaxFunc(e.Steps, func(a, b Step) int { return cmp.Compare(a.Duration(), b.Duration()) }), true
}

// Took is how long the pod took to be Ready, or, while it is not, how
// long it has been on its way at now.
func (e Explanation) Took(now time.Time) time.Duration {
	if len(e.Steps) == 0 {
		return 0
	}
	first := e.Steps[0].Start
	for _, s := range e.Steps {
		if s.Name == ReadyStep && s.Error == "" {
			return s.End.Sub(first)
		}
	}
	return now.Sub(first)
}

// WriteWorkload prints a workload as `skiff explain` shows it: its
// status, one line per pod (node, phase, last step, time to Ready, the
// slowest step), then what holds the slowest pod back.
func WriteWorkload(w io.Writer, wl Workload, now time.Time) error {
	fmt.Fprintf(w, "%s %s/%s: %s\n", wl.Kind, wl.Namespace, wl.Name, wl.Status)
	if len(wl.Pods) == 0 {
		_, err := fmt.Fprintln(w, "No pods.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tNODE\tPHASE\tAT\tTOOK\tSLOWEST STEP")
	for _, e := range wl.Pods {
		slowest := "-"
		if s, ok := e.Slowest(); ok {
			slowest = fmt.Sprintf("%s %s", s.Name, short(s.Duration()))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, orDash(e.Node), orDash(string(e.Phase)), e.Where(),
			short(e.Took(now)), slowest)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, heldBack(slowestPod(wl.Pods, now), now))
	return err
}

// slowestPod is the pod furthest from Ready: of those not Ready, the one
// on its way longest; if all are, the one that took longest.
func slowestPod(pods []Explanation, now time.Time) Explanation {
	return slices.MaxFunc(pods, func(a, b Explanation) int {
		if a.Ready() != b.Ready() {
			if a.Ready() {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Took(now), b.Took(now))
	})
}

// heldBack says, in a sentence, what holds pod e back (or held it
// longest, once Ready).
func heldBack(e Explanation, now time.Time) string {
	slowest, ok := e.Slowest()
	switch {
	case e.Unschedulable != "":
		return fmt.Sprintf("The slowest, %s, waits for a node: %s", e.Name, e.Unschedulable)
	case !ok:
		return fmt.Sprintf("The slowest, %s, has no steps recorded (created untraced, or before the server's store kept it).", e.Name)
	case e.Steps[len(e.Steps)-1].Error != "":
		last := e.Steps[len(e.Steps)-1]
		return fmt.Sprintf("The slowest, %s, is held at %s: %s", e.Name, last.Name, last.Error)
	case e.Ready():
		return fmt.Sprintf("The slowest, %s, was Ready in %s; its longest step: %s, %s (%s).", e.Name, short(e.Took(now)),
			slowest.Name, short(slowest.Duration()), orDash(result(slowest)))
	}
	last := e.Steps[len(e.Steps)-1]
	return fmt.Sprintf("The slowest, %s, is not Ready after %s: its last step, %s, ended %s ago; its longest: %s, %s (%s).", e.Name,
		short(e.Took(now)), last.Name, short(now.Sub(last.End)), slowest.Name, short(slowest.Duration()), orDash(result(slowest)))
}
