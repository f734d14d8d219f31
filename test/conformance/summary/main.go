// Command summary reads the JUnit reports of ginkgo runs of the conformance
// suite and prints, in Markdown, a table per SIG (passed, failed, not
// served yet, skipped) and every spec that did not pass with the first
// line of its failure.
//
//	go run ./summary junit-parallel.xml junit-serial.xml
//
// A failure is "not served yet" when the API server said it has no such
// resource (kinds skiff does not serve yet); any other is a failure.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// The parts of ginkgo's JUnit report this reads.
type report struct {
	Suites []struct {
		Cases []testCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type testCase struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Failure *message `xml:"failure"`
	Error   *message `xml:"error"`
	Skipped *message `xml:"skipped"`
}

// ran tells a spec that ran (and maybe skipped itself, saying why) from
// one the run's filters left out, which ginkgo reports as skipped with the
// bare message "skipped".
func (c testCase) ran() bool {
	return c.Status != "skipped" || (c.Skipped != nil && c.Skipped.Message != "skipped")
}

type message struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// outcome of one spec in the summary.
type outcome int

const (
	passed outcome = iota
	failed
	notServed
	skipped
)

// result is one spec's outcome.
type result struct {
	sig, name string
	outcome   outcome
	reason    string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: summary JUNIT.xml…")
		os.Exit(2)
	}
	var results []result
	for _, path := range os.Args[1:] {
		rs, err := readReport(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "summary:", err)
			os.Exit(1)
		}
		results = append(results, rs...)
	}
	write(os.Stdout, results)
	for _, r := range results {
		if r.outcome == failed || r.outcome == notServed {
			os.Exit(1)
		}
	}
}

func readReport(path string) ([]result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep report
	if err := xml.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var results []result
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "[It] ") && c.ran() {
				results = append(results, classify(c))
			}
		}
	}
	return results, nil
}

var (
	sigPattern = regexp.MustCompile(`\[sig-([a-z-]+)\]`)
	// labelsPattern is the list of labels ginkgo appends to a spec's name.
	labelsPattern = regexp.MustCompile(` \[[^][]*, [^][]*\]$`)
)

// notServedPattern is what the API server answers for a kind it does not serve.
var notServedPattern = regexp.MustCompile(`the server could not find the requested resource|no matches for kind|` +
	`the server doesn't have a resource type|API group not found in /apis|to exist in discovery|to be present`)

func classify(c testCase) result {
	r := result{name: labelsPattern.ReplaceAllString(strings.TrimPrefix(c.Name, "[It] "), ""), sig: "other"}
	if m := sigPattern.FindStringSubmatch(c.Name); m != nil {
		r.sig = m[1]
	}
	msg := c.Failure
	if msg == nil {
		msg = c.Error
	}
	switch {
	case c.Status == "passed":
		r.outcome = passed
	case c.Status == "skipped" || c.Status == "pending":
		r.outcome = skipped
	case msg != nil && notServedPattern.MatchString(msg.Message+msg.Body):
		r.outcome, r.reason = notServed, firstLine(msg)
	default:
		r.outcome = failed
		r.reason = c.Status
		if msg != nil {
			r.reason = firstLine(msg)
		}
	}
	return r
}

// firstLine is the first line of a failure that says something.
func firstLine(m *message) string {
	for _, l := range strings.Split(m.Message+"\n"+m.Body, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "[FAILED]") {
			return l
		}
	}
	return ""
}

func write(w io.Writer, results []result) {
	counts := map[string]*[4]int{}
	for _, r := range results {
		if counts[r.sig] == nil {
			counts[r.sig] = &[4]int{}
		}
		counts[r.sig][r.outcome]++
	}
	sigs := make([]string, 0, len(counts))
	for s := range counts {
		sigs = append(sigs, s)
	}
	sort.Strings(sigs)
	var total [4]int
	fmt.Fprintln(w, "| SIG | passed | failed | not served yet | skipped |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, s := range sigs {
		c := counts[s]
		fmt.Fprintf(w, "| sig-%s | %d | %d | %d | %d |\n", s, c[passed], c[failed], c[notServed], c[skipped])
		for i := range total {
			total[i] += c[i]
		}
	}
	fmt.Fprintf(w, "| all | %d | %d | %d | %d |\n", total[passed], total[failed], total[notServed], total[skipped])
	sort.Slice(results, func(i, j int) bool { return results[i].name < results[j].name })
	for _, o := range []struct {
		outcome outcome
		title   string
	}{{failed, "Failed"}, {notServed, "Not served yet"}} {
		listed := false
		for _, r := range results {
			if r.outcome != o.outcome {
				continue
			}
			if !listed {
				fmt.Fprintf(w, "\n## %s\n\n", o.title)
				listed = true
			}
			fmt.Fprintf(w, "- %s — %s\n", r.name, r.reason)
		}
	}
}
