package podtrace

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTimeline prints a journey as `skiff explain pod` shows it: one line
// per step, in the order the steps began, with its offset from the first
// step, its duration, the component and node that did it, and its result.
func WriteTimeline(w io.Writer, j Journey) error {
	fmt.Fprintf(w, "Pod %s/%s (uid %s)", j.Namespace, j.Name, j.UID)
	if j.TraceID != "" {
		fmt.Fprintf(w, ", trace %s", j.TraceID)
	}
	fmt.Fprintln(w)
	if len(j.Steps) == 0 {
		_, err := fmt.Fprintln(w, "No steps recorded.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "OFFSET\tDURATION\tCOMPONENT\tNODE\tSTEP\tRESULT")
	first := j.Steps[0].Start
	for _, s := range j.Steps {
		fmt.Fprintf(tw, "+%s\t%s\t%s\t%s\t%s\t%s\n", short(s.Start.Sub(first)), short(s.Duration()),
			orDash(s.Component), orDash(s.Node), s.Name, result(s))
	}
	return tw.Flush()
}

// result is a step's error, or its attributes as key=value in key order.
func result(s Step) string {
	if s.Error != "" {
		return "error: " + s.Error
	}
	parts := make([]string, 0, len(s.Attrs))
	for _, k := range slices.Sorted(maps.Keys(s.Attrs)) {
		parts = append(parts, k+"="+s.Attrs[k])
	}
	return strings.Join(parts, " ")
}

// short rounds a duration to what a reader compares: microseconds below a
// millisecond, milliseconds below a minute, seconds above.
func short(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Minute:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
