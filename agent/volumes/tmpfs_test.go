package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseMountInfo(t *testing.T) {
	tests := []struct {
		name, line    string
		point, fstype string
		ok            bool
	}{
		{"no optional fields", "36 35 98:0 / /var/lib/skiff rw,noatime - ext4 /dev/sda1 rw", "/var/lib/skiff", "ext4", true},
		{"optional fields", "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:2 - tmpfs tmpfs rw,size=1024k", "/mnt2", "tmpfs", true},
		{"escaped mount point", `40 35 0:50 / /tmp/a\040b\134c rw - tmpfs tmpfs rw`, `/tmp/a b\c`, "tmpfs", true},
		{"no separator", "36 35 98:0 / /x rw shared:1 ext4 /dev/sda1", "", "", false},
		{"short line", "36 35", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			point, fstype, ok := parseMountInfo(tt.line)
			if point != tt.point || fstype != tt.fstype || ok != tt.ok {
				t.Errorf("got %q %q %v, want %q %q %v", point, fstype, ok, tt.point, tt.fstype, tt.ok)
			}
		})
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:       "plain",
		`a\040b`:      "a b",
		`tab\011`:     "tab\t",
		`\134`:        `\`,
		`trailing\04`: `trailing\04`,
		`not\999oct`:  `not\999oct`,
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

// mounts counts the mounts at dir in /proc/self/mountinfo and returns the
// super options of the top one.
func mounts(t *testing.T, dir string) (int, string) {
	t.Helper()
	data, err := os.ReadFile(mountInfo)
	if err != nil {
		t.Fatal(err)
	}
	n, opts := 0, ""
	for _, line := range strings.Split(string(data), "\n") {
		if point, _, ok := parseMountInfo(line); ok && point == dir {
			fields := strings.Fields(line)
			n, opts = n+1, fields[len(fields)-1]
		}
	}
	return n, opts
}

// halfOfRAM is the size the kernel gives a tmpfs mounted without size=:
// half of the RAM's pages.
func halfOfRAM(t *testing.T, pageSize int64) int64 {
	t.Helper()
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		t.Fatal(err)
	}
	pages := int64(info.Totalram) * int64(info.Unit) / pageSize
	return pages / 2 * pageSize
}

func TestTmpfs(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	tests := []struct {
		name      string
		sizeLimit *resource.Quantity
		wantBytes int64 // 0: the kernel's default, half of RAM
	}{
		{"size limit", resource.NewQuantity(4<<20, resource.BinarySI), 4 << 20},
		{"no size limit", nil, 0},
		{"zero size limit means none", resource.NewQuantity(0, resource.BinarySI), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(base, "mem")
			t.Cleanup(func() {
				for range 4 { // whatever happened, leave no mount behind
					if unix.Unmount(dir, unix.MNT_DETACH) != nil {
						break
					}
				}
			})
			for range 2 { // the second call adopts the first mount
				if err := MountTmpfs(dir, tt.sizeLimit); err != nil {
					t.Fatal(err)
				}
			}
			checkTmpfs(t, dir, tt.wantBytes)
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("in memory"), 0o644); err != nil {
				t.Fatal(err)
			}
			for range 2 { // unmounting twice is harmless
				if err := Unmount(dir); err != nil {
					t.Fatal(err)
				}
			}
			if n, _ := mounts(t, dir); n != 0 {
				t.Fatalf("%d mounts left at %s", n, dir)
			}
			if _, err := os.Stat(filepath.Join(dir, "f")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the file outlived the tmpfs: %v", err)
			}
		})
	}
}

// checkTmpfs checks that exactly one tmpfs of size bytes (0: the kernel's
// default) is mounted at dir.
func checkTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	n, opts := mounts(t, dir)
	if n != 1 {
		t.Fatalf("%d mounts at %s, want exactly one", n, dir)
	}
	if fstype, _ := mountedType(dir); fstype != "tmpfs" {
		t.Fatalf("%s is %q, want tmpfs", dir, fstype)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if size == 0 {
		size = halfOfRAM(t, st.Bsize)
	}
	if got := int64(st.Blocks) * st.Bsize; got != size {
		t.Errorf("tmpfs of %d bytes (%s), want %d", got, opts, size)
	}
}

func TestUnmountNothing(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]string{"not a mount point": dir, "missing": filepath.Join(dir, "missing")}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			if err := Unmount(p); err != nil {
				t.Errorf("Unmount(%s) = %v, want nil", p, err)
			}
		})
	}
}
