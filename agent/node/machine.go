package node

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/agent/stats"
)

// machine is what the node reports about itself, read from the kernel.
type machine struct {
	CPUs          int
	MemoryBytes   int64
	MemAvailable  int64
	DiskBytes     int64 // filesystem holding the data dir
	DiskAvailable int64
	Processes     int64
	PIDMax        int64
	KernelVersion string
	OSImage       string
	Arch          string
	BootID        string
	MachineID     string
	Hostname      string
}

func readMachine(dataDir string) (machine, error) {
	m := machine{CPUs: runtime.NumCPU(), Arch: runtime.GOARCH}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return m, fmt.Errorf("uname: %w", err)
	}
	m.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	m.Hostname, _ = os.Hostname()
	m.OSImage = osImage()
	m.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	m.MachineID = readTrimmed("/etc/machine-id")
	mem, err := stats.Meminfo("/proc")
	if err != nil {
		return m, err
	}
	m.MemoryBytes, m.MemAvailable = int64(ptr.Deref(mem.MemTotalBytes, 0)), int64(ptr.Deref(mem.MemAvailableBytes, 0))
	var fs unix.Statfs_t
	if err := unix.Statfs(dataDir, &fs); err != nil {
		return m, fmt.Errorf("statfs %s: %w", dataDir, err)
	}
	m.DiskBytes = int64(fs.Blocks) * fs.Bsize
	m.DiskAvailable = int64(fs.Bavail) * fs.Bsize
	m.PIDMax, _ = strconv.ParseInt(readTrimmed("/proc/sys/kernel/pid_max"), 10, 64)
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) == nil {
		m.Processes = int64(info.Procs)
	}
	return m, nil
}

func readTrimmed(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func osImage() string {
	b, _ := os.ReadFile("/etc/os-release")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}
