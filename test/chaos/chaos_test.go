package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/test/labtest"
)

// image is the workload's image, imported on every node.
const image = "skiff.test/busybox:1"

// converge bounds the wait for the cluster to settle after a fault.
const converge = 3 * time.Minute

var skiffBin string

func TestMain(m *testing.M) {
	if os.Getenv("SKIFF_TEST_CHAOS") == "" {
		os.Exit(m.Run()) // TestChaos skips
	}
	dir, err := os.MkdirTemp("", "skiff-chaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	skiffBin = filepath.Join(dir, "skiff")
	if err := labtest.Build(dir, "build"); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestChaos runs the workload through every fault in turn and checks the
// cluster after each.
func TestChaos(t *testing.T) {
	if os.Getenv("SKIFF_TEST_CHAOS") == "" {
		t.Skip("the chaos tier runs a lab of five nodes through faults for minutes: make test-chaos (SKIFF_TEST_CHAOS=1)")
	}
	tar, err := images.Busybox(image)
	if err != nil {
		t.Fatal(err)
	}
	l := labtest.Start(t, labtest.Config{Servers: 3, Agents: 2, SmallDisk: []string{"lab-node2"},
		Skiff: skiffBin, Images: map[string][]byte{"busybox.tar": tar}})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	c := newChaos(t, l, rand.New(rand.NewPCG(seed, seed)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.w.run(ctx) }()
	defer func() { cancel(); <-done }()

	c.step("none (the workload alone)", noFault)
	only := os.Getenv("SKIFF_CHAOS_FAULTS") // a part of the names of the faults to run; all by default
	for _, f := range faults {
		if !strings.Contains(f.name, only) {
			continue
		}
		if !c.step(f.name, f.inject) {
			break
		}
	}
	cancel()
	<-done
	t.Logf("chaos report (seed %d):\n%s", seed, c.report())
}

// row is one fault's line in the report.
type row struct {
	fault, target   string
	acked, failed   int // the workload's writes while the fault lasted
	converged       time.Duration
	convergedInTime bool
	found           map[string]int // problems found, by kind
}

// report is the run's table: a line a fault, then the totals, with the
// convergence times' median and maximum.
func (c *chaos) report() string {
	var b strings.Builder
	b.WriteString("| fault | target | writes acknowledged | writes failed | lost writes | duplicates | leaks | converged after |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	total := row{found: map[string]int{}}
	var times []time.Duration
	for _, r := range c.rows {
		conv := r.converged.Round(100 * time.Millisecond).String()
		if !r.convergedInTime {
			conv = "not in " + converge.String()
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s |\n", r.fault, r.target, r.acked, r.failed, r.found[lost], r.found[duplicate], r.found[leak], conv)
		total.acked, total.failed = total.acked+r.acked, total.failed+r.failed
		for k, n := range r.found {
			total.found[k] += n
		}
		times = append(times, r.converged)
	}
	slices.Sort(times)
	fmt.Fprintf(&b, "\n%d faults; %d writes acknowledged, %d failed; lost writes %d, duplicates %d, leaks %d; converged p50 %s, max %s\n",
		len(c.rows)-1, total.acked, total.failed, total.found[lost], total.found[duplicate], total.found[leak],
		times[len(times)/2].Round(100*time.Millisecond), times[len(times)-1].Round(100*time.Millisecond))
	return b.String()
}
