package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	v1 "k8s.io/api/core/v1"
)

// hostPathKinds describes each type CheckHostPath checks, as the kubelet
// words it.
var hostPathKinds = map[v1.HostPathType]string{
	v1.HostPathDirectory: "directory",
	v1.HostPathFile:      "file",
	v1.HostPathSocket:    "socket file",
	v1.HostPathCharDev:   "character device",
	v1.HostPathBlockDev:  "block device",
}

// CheckHostPath enforces a hostPath volume's type on path before it is
// mounted, as the kubelet does. path must not contain ".." (ErrInvalidPath).
// A nil or Unset type checks nothing else. DirectoryOrCreate creates a
// missing directory (0755, whatever the umask) with its parents;
// FileOrCreate creates a missing empty file (0644, whatever the umask) but
// not its directory, which must exist. Otherwise
// path, following symlinks, must exist (else an error matching
// fs.ErrNotExist) and be of the type (else ErrHostPathType). Checking
// again is harmless.
func CheckHostPath(path string, t *v1.HostPathType) error {
	if hasBacksteps(path) {
		return newError(ErrInvalidPath, fmt.Sprintf("invalid HostPath `%s`: must not contain '..'", path), nil)
	}
	if t == nil || *t == v1.HostPathUnset {
		return nil
	}
	want := *t
	switch want {
	case v1.HostPathDirectoryOrCreate:
		want = v1.HostPathDirectory
		if missing(path) {
			return createHostDir(path)
		}
	case v1.HostPathFileOrCreate:
		want = v1.HostPathFile
		if missing(path) {
			return createHostFile(path)
		}
	}
	if _, ok := hostPathKinds[want]; !ok {
		return newError(ErrHostPathType, fmt.Sprintf("%s is an invalid volume type", want), nil)
	}
	return hasType(path, want)
}

// missing reports whether nothing exists at path (following symlinks).
func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// hasType checks that path exists and is of type want.
func hasType(path string, want v1.HostPathType) error {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newError(fs.ErrNotExist, fmt.Sprintf("hostPath %s doesn't exist", path), err)
	}
	if err != nil {
		return fmt.Errorf("hostPath %s: %w", path, err)
	}
	got, ok := hostPathType(info.Mode())
	if !ok {
		msg := fmt.Sprintf("hostPath type check failed, %s is not a %s, unable to determine its type", path, hostPathKinds[want])
		return newError(ErrHostPathType, msg, nil)
	}
	if got != want {
		msg := fmt.Sprintf("hostPath type check failed: %s is not a %s, it's a %s", path, hostPathKinds[want], got)
		return newError(ErrHostPathType, msg, nil)
	}
	return nil
}

// hostPathType is the type a file of mode m has, if it is one hostPath knows.
func hostPathType(m fs.FileMode) (v1.HostPathType, bool) {
	switch {
	case m.IsDir():
		return v1.HostPathDirectory, true
	case m.IsRegular():
		return v1.HostPathFile, true
	case m&fs.ModeSocket != 0:
		return v1.HostPathSocket, true
	case m&fs.ModeCharDevice != 0:
		return v1.HostPathCharDev, true
	case m&fs.ModeDevice != 0:
		return v1.HostPathBlockDev, true
	}
	return "", false
}

// createHostDir makes a DirectoryOrCreate path, mode 0755 whatever the umask.
func createHostDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("create hostPath %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return fmt.Errorf("create hostPath %s: %w", path, err)
	}
	return nil
}

// createHostFile makes a FileOrCreate path: an empty file, mode 0644
// whatever the umask, in a directory that must exist.
func createHostFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return hasType(path, v1.HostPathFile)
	}
	if err != nil {
		return fmt.Errorf("create hostPath %s: %w", path, err)
	}
	err = f.Chmod(0o644)
	return errors.Join(err, f.Close())
}
