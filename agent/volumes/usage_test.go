package volumes

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiskUsageCountsBlocksAndHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	empty, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i) | 1 // not zero, so no file system stores it sparse
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "sub", "big")
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(big, filepath.Join(dir, "again")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr", filepath.Join(dir, "usr")); err != nil {
		t.Fatal(err)
	}
	// A sparse file takes no blocks for its hole.
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	used, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if grew := used - empty; grew < 1<<20 || grew > 1<<20+64<<10 {
		t.Errorf("usage grew by %d bytes for one 1 MiB file linked twice, a symlink and a hole; want about 1 MiB", grew)
	}
	if _, err := DiskUsage(filepath.Join(dir, "absent")); err != nil {
		t.Errorf("a directory that is gone: %v, want usage 0 and no error", err)
	}
}
