package node

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadMachineMemoryInBytes(t *testing.T) {
	m, err := readMachine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		t.Fatal(err)
	}
	if want := int64(info.Totalram) * int64(info.Unit); m.MemoryBytes != want {
		t.Errorf("memory %d bytes, the kernel says %d", m.MemoryBytes, want)
	}
	if m.MemAvailable <= 0 || m.MemAvailable > m.MemoryBytes {
		t.Errorf("available %d of %d bytes", m.MemAvailable, m.MemoryBytes)
	}
	if m.DiskBytes <= 0 || m.CPUs <= 0 || m.KernelVersion == "" {
		t.Errorf("machine %+v", m)
	}
}
