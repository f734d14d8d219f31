package volumes

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

// mountInfo is where the mounts seen by this process are listed.
const mountInfo = "/proc/self/mountinfo"

// MountTmpfs backs dir with tmpfs, as the kubelet does for an emptyDir of
// medium Memory: with size=<bytes> when sizeLimit is set and positive,
// else the kernel's default (half of RAM). dir is created if missing. When
// a tmpfs is already mounted at dir nothing is done, so a restarted agent
// adopts its earlier mount (whose size is left as it is). The caller owns
// the mount and removes it with Unmount.
func MountTmpfs(dir string, sizeLimit *resource.Quantity) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create tmpfs dir: %w", err)
	}
	fstype, err := mountedType(dir)
	if err != nil {
		return err
	}
	if fstype == "tmpfs" {
		return nil
	}
	var opts string
	if sizeLimit != nil && sizeLimit.Value() > 0 {
		opts = "size=" + strconv.FormatInt(sizeLimit.Value(), 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// Unmount unmounts what is mounted at dir (the top mount, if several are
// stacked). A dir that is not a mount point, or does not exist, is already
// unmounted; dir itself is not removed.
func Unmount(dir string) error {
	fstype, err := mountedType(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fstype == "") {
		return nil
	}
	if err != nil {
		return err
	}
	if err := unix.Unmount(dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// mountedType is the filesystem type of the top mount at dir, or "" when
// dir is not a mount point.
func mountedType(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	f, err := os.Open(mountInfo)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fstype := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if point, t, ok := parseMountInfo(sc.Text()); ok && point == resolved {
			fstype = t
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", mountInfo, err)
	}
	return fstype, nil
}

// parseMountInfo returns the mount point and filesystem type of one line
// of /proc/self/mountinfo:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
//
// The mount point is the fifth field; the type follows the "-" separator.
func parseMountInfo(line string) (point, fstype string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 7 {
		return "", "", false
	}
	for i := 6; i < len(fields)-1; i++ {
		if fields[i] == "-" {
			return unescapeOctal(fields[4]), fields[i+1], true
		}
	}
	return "", "", false
}

// unescapeOctal undoes the \ooo escapes (space, tab, newline, backslash)
// the kernel writes in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
