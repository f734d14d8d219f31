package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// counters are what a fake cgroup reports. limit 0 writes "no limit".
type counters struct {
	cpuNs, memory, inactiveFile, rss, limit uint64
}

// fakeVersion writes fake cgroups of one cgroup version under a fake mount.
type fakeVersion struct {
	name      string
	hierarchy func(fs string) hierarchy                       // what detect should pick
	mount     func(t *testing.T, fs string)                   // the files that tell the version
	write     func(t *testing.T, fs, path string, c counters) // one cgroup's files
	dirs      func(fs, path string) []string                  // one cgroup's directories
	usageFile func(fs, path string) string                    // its memory usage file
}

// remove removes the cgroup at path, as when its container exits.
func (v fakeVersion) remove(t *testing.T, fs, path string) {
	removeAll(t, v.dirs(fs, path)...)
}

// versions are the cgroup layouts the tests run against.
var versions = []fakeVersion{
	{
		name:      "v1",
		hierarchy: func(fs string) hierarchy { return cgroupV1{root: fs} },
		mount: func(t *testing.T, fs string) {
			// Hybrid, like the test machine: a v2 mount without controllers
			// beside the v1 controllers.
			writeFile(t, filepath.Join(fs, "unified", "cgroup.controllers"), "")
		},
		write: writeV1,
		dirs: func(fs, path string) []string {
			return []string{filepath.Join(fs, "cpuacct", path), filepath.Join(fs, "memory", path)}
		},
		usageFile: func(fs, path string) string { return filepath.Join(fs, "memory", path, "memory.usage_in_bytes") },
	},
	{
		name:      "v2",
		hierarchy: func(fs string) hierarchy { return cgroupV2{root: fs} },
		mount: func(t *testing.T, fs string) {
			writeFile(t, filepath.Join(fs, "cgroup.controllers"), "cpu memory pids")
		},
		write:     writeV2,
		dirs:      func(fs, path string) []string { return []string{filepath.Join(fs, path)} },
		usageFile: func(fs, path string) string { return filepath.Join(fs, path, "memory.current") },
	},
}

// writeV1 writes the cpuacct and memory files of a v1 cgroup. memory.stat
// also carries the cgroup's own (non-total_) counters with other values, as
// the kernel does, so that reading the wrong key shows.
func writeV1(t *testing.T, fs, path string, c counters) {
	writeFile(t, filepath.Join(fs, "cpuacct", path, "cpuacct.usage"), fmt.Sprintf("%d\n", c.cpuNs))
	writeFile(t, filepath.Join(fs, "cpuacct", path, "cpuacct.usage_user"), "1\n")
	mem := filepath.Join(fs, "memory", path)
	writeFile(t, filepath.Join(mem, "memory.usage_in_bytes"), fmt.Sprintf("%d\n", c.memory))
	writeFile(t, filepath.Join(mem, "memory.max_usage_in_bytes"), "999999999\n")
	writeFile(t, filepath.Join(mem, "memory.stat"), fmt.Sprintf(
		"cache 7\nrss 3\ninactive_file 5\nactive_file 11\n"+
			"hierarchical_memory_limit 9223372036854771712\n"+
			"total_cache 70\ntotal_rss %d\ntotal_inactive_anon 13\ntotal_inactive_file %d\ntotal_active_file 17\n",
		c.rss, c.inactiveFile))
	limit := "9223372036854771712" // what v1 reports without a limit
	if c.limit > 0 {
		limit = fmt.Sprint(c.limit)
	}
	writeFile(t, filepath.Join(mem, "memory.limit_in_bytes"), limit+"\n")
}

// writeV2 writes the files of a v2 cgroup; cpu.stat counts microseconds.
func writeV2(t *testing.T, fs, path string, c counters) {
	dir := filepath.Join(fs, path)
	writeFile(t, filepath.Join(dir, "cgroup.controllers"), "cpu memory")
	writeFile(t, filepath.Join(dir, "cpu.stat"), fmt.Sprintf(
		"usage_usec %d\nuser_usec 5\nsystem_usec 6\nnr_periods 0\n", c.cpuNs/1000))
	writeFile(t, filepath.Join(dir, "memory.current"), fmt.Sprintf("%d\n", c.memory))
	writeFile(t, filepath.Join(dir, "memory.stat"), fmt.Sprintf(
		"anon %d\nfile 70\nkernel 9\nactive_anon 3\ninactive_anon 13\nactive_file 17\ninactive_file %d\n",
		c.rss, c.inactiveFile))
	limit := "max"
	if c.limit > 0 {
		limit = fmt.Sprint(c.limit)
	}
	writeFile(t, filepath.Join(dir, "memory.max"), limit+"\n")
}

// writeProc writes a fake /proc/stat and /proc/meminfo. ticks are the
// "cpu" line's user, nice, system, idle, iowait, irq, softirq, steal,
// guest, guest_nice; memory values are in kB as meminfo shows them.
func writeProc(t *testing.T, proc string, ticks [10]uint64, btime int64, totalKB, freeKB, inactiveFileKB, anonKB uint64) {
	cpu := fmt.Sprint(ticks[0])
	for _, n := range ticks[1:] {
		cpu += fmt.Sprint(" ", n)
	}
	writeFile(t, filepath.Join(proc, "stat"), fmt.Sprintf(
		"cpu  %s\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 12345 1 2\nctxt 99\nbtime %d\nprocesses 10\n", cpu, btime))
	writeFile(t, filepath.Join(proc, "meminfo"), fmt.Sprintf(
		"MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   1 kB\nActive(file):   2 kB\n"+
			"Inactive(file): %d kB\nAnonPages:      %d kB\nHugePages_Total:       0\n",
		totalKB, freeKB, inactiveFileKB, anonKB))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
}
