package stats

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

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
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return usage{}, time.Time{}, err
	}
	stat, err := fs.Stat()
	if err != nil {
		return usage{}, time.Time{}, err
	}
	c := stat.CPUTotal
	if c == (procfs.CPUStat{}) {
		return usage{}, time.Time{}, fmt.Errorf("%s/stat: no cpu line", proc)
	}
	mem, err := fs.Meminfo()
	if err != nil {
		return usage{}, time.Time{}, err
	}
	total := ptr.Deref(mem.MemTotalBytes, 0)
	u := usage{
		time:         clk.Now(),
		cpu:          uint64(math.Round((c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ) * float64(time.Second))),
		memory:       total - min(ptr.Deref(mem.MemFreeBytes, 0), total),
		inactiveFile: ptr.Deref(mem.InactiveFileBytes, 0),
		rss:          ptr.Deref(mem.AnonPagesBytes, 0),
		limit:        total,
	}
	return u, time.Unix(int64(stat.BootTime), 0), nil
}

// Meminfo reads proc's meminfo.
func Meminfo(proc string) (procfs.Meminfo, error) {
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return procfs.Meminfo{}, err
	}
	return fs.Meminfo()
}
