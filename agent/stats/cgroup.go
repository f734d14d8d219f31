package stats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// usage is what a cgroup (or the node) had used at time.
type usage struct {
	time         time.Time
	cpu          uint64 // cumulative CPU time, ns
	memory       uint64 // memory in use, page cache included, bytes
	inactiveFile uint64 // page cache the kernel may reclaim first, bytes
	rss          uint64 // anonymous memory, bytes
	limit        uint64 // memory limit, bytes; 0 for none
}

// workingSet is memory in use minus inactive page cache, floored at 0, as
// cadvisor computes it for the kubelet.
func (u usage) workingSet() uint64 {
	if u.inactiveFile > u.memory {
		return 0
	}
	return u.memory - u.inactiveFile
}

// hierarchy reads a cgroup's CPU and memory counters, leaving time unset.
// path is the cgroup's path as runc is given it, e.g. /skiff/pod<uid>/<id>.
type hierarchy interface {
	read(path string) (usage, error)
}

var (
	_ hierarchy = cgroupV1{}
	_ hierarchy = cgroupV2{}
)

// detect picks the cgroup version mounted at root: v2 if root is the
// unified hierarchy (it has cgroup.controllers), else v1 with a directory
// per controller. A hybrid mount, v1 controllers beside a v2 hierarchy at
// root/unified that has no controllers, counts as v1.
func detect(root string) hierarchy {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return cgroupV2{root: root}
	}
	return cgroupV1{root: root}
}

// cgroupV1 reads the cpuacct and memory controllers of cgroup v1. Memory
// counters are the hierarchical ones (total_*), children included.
type cgroupV1 struct{ root string }

func (h cgroupV1) read(path string) (usage, error) {
	var f files
	mem := filepath.Join(h.root, "memory", path)
	stat := f.keyed(filepath.Join(mem, "memory.stat"))
	u := usage{
		cpu:          f.uint(filepath.Join(h.root, "cpuacct", path, "cpuacct.usage")),
		memory:       f.uint(filepath.Join(mem, "memory.usage_in_bytes")),
		inactiveFile: stat["total_inactive_file"],
		rss:          stat["total_rss"],
		limit:        f.limit(filepath.Join(mem, "memory.limit_in_bytes")),
	}
	return u, f.err
}

// cgroupV2 reads a cgroup of the v2 unified hierarchy.
type cgroupV2 struct{ root string }

func (h cgroupV2) read(path string) (usage, error) {
	var f files
	dir := filepath.Join(h.root, path)
	stat := f.keyed(filepath.Join(dir, "memory.stat"))
	u := usage{
		cpu:          f.keyed(filepath.Join(dir, "cpu.stat"))["usage_usec"] * 1000,
		memory:       f.uint(filepath.Join(dir, "memory.current")),
		inactiveFile: stat["inactive_file"],
		rss:          stat["anon"],
		limit:        f.limit(filepath.Join(dir, "memory.max")),
	}
	return u, f.err
}

// gone says err means the cgroup no longer exists: a file missing, or the
// kernel refusing to read a removed cgroup's open file.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV)
}
