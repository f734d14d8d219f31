package stats

import (
	"path/filepath"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestReadNode(t *testing.T) {
	proc := t.TempDir()
	// user nice system idle iowait irq softirq steal guest guest_nice
	ticks := [10]uint64{1000, 20, 300, 90000, 400, 5, 6, 70, 8, 9}
	writeProc(t, proc, ticks, 1_700_000_000, 8_000_000, 3_000_000, 1_000_000, 2_500_000)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	got, boot, err := readNode(proc, testclock.NewFakePassiveClock(now))
	if err != nil {
		t.Fatal(err)
	}
	used := ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] // not idle, iowait, steal, guest
	want := usage{
		time:         now,
		cpu:          used * uint64(10*time.Millisecond),
		memory:       (8_000_000 - 3_000_000) * 1024,
		inactiveFile: 1_000_000 * 1024,
		rss:          2_500_000 * 1024,
		limit:        8_000_000 * 1024,
	}
	if got != want {
		t.Errorf("readNode = %+v\nwant       %+v", got, want)
	}
	if !boot.Equal(time.Unix(1_700_000_000, 0)) {
		t.Errorf("boot = %v", boot)
	}
}

func TestReadNodeErrors(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Now())
	t.Run("no proc", func(t *testing.T) {
		if _, _, err := readNode(filepath.Join(t.TempDir(), "proc"), clk); err == nil {
			t.Error("no error without /proc")
		}
	})
	t.Run("no cpu line", func(t *testing.T) {
		proc := t.TempDir()
		writeFile(t, filepath.Join(proc, "stat"), "btime 1\n")
		writeFile(t, filepath.Join(proc, "meminfo"), "MemTotal: 1 kB\n")
		if _, _, err := readNode(proc, clk); err == nil {
			t.Error("no error for a /proc/stat without a cpu line")
		}
	})
}
