package cri_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExecSync runs `true` in a running container, as an exec probe
// does each period: the time per op is the whole round trip through
// containerd, its shim and runc; -cpuprofile shows what this process (the
// agent's side) spends on it. cpu-ms/op reports that CPU time (user and
// system, of this process only) and node-cpu-ms/op the whole machine's busy
// time, containerd, the shim and runc included. Results are in docs/perf.md.
func BenchmarkExecSync(b *testing.B) {
	n := startExecNode(b)
	ctx := context.Background()
	before, nodeBefore := processCPU(b), nodeCPU(b)
	for b.Loop() {
		if _, stderr, code, err := n.rt.ExecSync(ctx, n.app, []string{"true"}, 10*time.Second); err != nil || code != 0 {
			b.Fatalf("exit %d, %v; stderr %q", code, err, stderr)
		}
	}
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perOp(processCPU(b)-before), "cpu-ms/op")
	b.ReportMetric(perOp(nodeCPU(b)-nodeBefore), "node-cpu-ms/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nodeCPU is the machine's busy CPU time since boot: /proc/stat's user,
// nice, system, irq and softirq ticks (USER_HZ, 10 ms), so neither idle,
// iowait nor the time the hypervisor stole.
func nodeCPU(b *testing.B) time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	busyField := map[int]bool{0: true, 1: true, 2: true, 5: true, 6: true}
	var busy int64
	for i, field := range strings.Fields(line)[1:] {
		ticks, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q: %v", line, err)
		}
		if busyField[i] {
			busy += ticks
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond
}
