package cri

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// oomKilled says the kernel's OOM killer killed a process in the cgroup at
// path (as containers get it: relative to the hierarchy's root). It reads
// the oom_kill counter of cgroup v2 (memory.events) or v1
// (memory.oom_control); a cgroup that is gone or unreadable counts as no.
func oomKilled(path string) bool {
	for _, file := range []string{
		filepath.Join("/sys/fs/cgroup", path, "memory.events"),
		filepath.Join("/sys/fs/cgroup/memory", path, "memory.oom_control"),
	} {
		if data, err := os.ReadFile(file); err == nil {
			return counter(data, "oom_kill") > 0
		}
	}
	return false
}

// counter reads "<name> <n>" out of a cgroup flat-keyed file.
func counter(data []byte, name string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if ok && string(key) == name {
			n, _ := strconv.ParseInt(string(value), 10, 64)
			return n
		}
	}
	return 0
}
