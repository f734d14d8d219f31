package stats

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// userHZ is the unit of /proc/stat's times, ticks per second: USER_HZ,
// fixed at 100 on every architecture skiff builds for.
const userHZ = 100

// readNode reads the whole machine's usage and boot time from proc.
//
// The node is read from /proc, not from the root cgroup, because /proc
// reads the same under both cgroup versions while the root cgroup does not:
// v2's has no memory.current. CPU is /proc/stat's "cpu" line, the time
// spent in user, nice, system, irq and softirq (not idle, iowait or steal;
// guest time is already in user). Memory is /proc/meminfo: in use is
// MemTotal - MemFree (what runc reports for the v2 root cgroup), inactive
// file is Inactive(file), RSS is AnonPages, and the limit is MemTotal, from
// which the kubelet computes the node's available bytes too.
func readNode(proc string, clk clock.PassiveClock) (usage, time.Time, error) {
	var f files
	stat := f.read(filepath.Join(proc, "stat"))
	mem := f.keyed(filepath.Join(proc, "meminfo"))
	if f.err != nil {
		return usage{}, time.Time{}, f.err
	}
	cpu, boot, err := parseStat(string(stat))
	if err != nil {
		return usage{}, time.Time{}, err
	}
	u := usage{
		time:         clk.Now(),
		cpu:          cpu,
		memory:       mem["MemTotal"] - min(mem["MemFree"], mem["MemTotal"]),
		inactiveFile: mem["Inactive(file)"],
		rss:          mem["AnonPages"],
		limit:        mem["MemTotal"],
	}
	return u, boot, nil
}

// Meminfo reads proc's meminfo, its values in bytes.
func Meminfo(proc string) (map[string]uint64, error) {
	var f files
	mem := f.keyed(filepath.Join(proc, "meminfo"))
	return mem, f.err
}

// parseStat reads /proc/stat: the CPU time used by all CPUs, in ns (see
// readNode), and the boot time.
func parseStat(stat string) (cpu uint64, boot time.Time, err error) {
	var sawCPU bool
	for _, line := range strings.Split(stat, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 8 && fields[0] == "cpu":
			// cpu user nice system idle iowait irq softirq steal guest guest_nice
			for _, i := range []int{1, 2, 3, 6, 7} {
				ticks, err := strconv.ParseUint(fields[i], 10, 64)
				if err != nil {
					return 0, boot, fmt.Errorf("parse /proc/stat cpu: %w", err)
				}
				cpu += ticks * (uint64(time.Second) / userHZ)
			}
			sawCPU = true
		case len(fields) == 2 && fields[0] == "btime":
			secs, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, boot, fmt.Errorf("parse /proc/stat btime: %w", err)
			}
			boot = time.Unix(secs, 0)
		}
	}
	if !sawCPU {
		return 0, boot, errors.New("parse /proc/stat: no cpu line")
	}
	return cpu, boot, nil
}
