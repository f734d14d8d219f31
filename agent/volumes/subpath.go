package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ResolveSubPath returns the host path a volumeMount's subPath names
// inside volumeDir, with every symlink resolved, as the kubelet does
// before bind-mounting it. An empty subPath is volumeDir itself.
//
// subPath must be relative and free of ".." elements (ErrInvalidPath).
// Symlinks met on the way are followed only while they stay inside the
// volume (else ErrOutsideVolume). Missing elements are created as
// directories with the volume directory's mode, whatever the umask. The
// check is made once: something that replaces a checked directory with a
// symlink before the runtime mounts the result is not caught.
func ResolveSubPath(volumeDir, subPath string) (string, error) {
	if subPath == "" {
		return volumeDir, nil
	}
	if filepath.IsAbs(subPath) {
		return "", newError(ErrInvalidPath, fmt.Sprintf("error SubPath `%s` must not be an absolute path", subPath), nil)
	}
	if hasBacksteps(subPath) {
		return "", newError(ErrInvalidPath, fmt.Sprintf("unable to provision SubPath `%s`: must not contain '..'", subPath), nil)
	}
	base, err := filepath.EvalSymlinks(volumeDir)
	if err != nil {
		return "", fmt.Errorf("resolve volume %s: %w", volumeDir, err)
	}
	info, err := os.Stat(base)
	if err != nil {
		return "", fmt.Errorf("resolve volume %s: %w", volumeDir, err)
	}
	mode := info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	cur := base
	for _, name := range strings.Split(filepath.Clean(subPath), "/") {
		if cur, err = step(base, cur, name, mode); err != nil {
			return "", fmt.Errorf("subPath %s: %w", subPath, err)
		}
	}
	return cur, nil
}

// step goes from cur, a resolved directory inside base, to its entry
// name: creating it as a directory when missing, resolving it when it is a
// symlink, and refusing a result outside base.
func step(base, cur, name string, mode fs.FileMode) (string, error) {
	next := filepath.Join(cur, name)
	info, err := os.Lstat(next)
	if errors.Is(err, fs.ErrNotExist) {
		if err := makeDir(next, mode); err != nil {
			return "", err
		}
		return next, nil
	}
	if err != nil {
		return "", err
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return next, nil
	}
	resolved, err := filepath.EvalSymlinks(next)
	if err != nil {
		return "", err
	}
	if !within(resolved, base) {
		return "", newError(ErrOutsideVolume, fmt.Sprintf("subpath %q not within volume path %q", resolved, base), nil)
	}
	return resolved, nil
}

// makeDir creates the directory p with mode, setting the mode through an
// open descriptor that refuses symlinks, so that a symlink swapped in after
// the mkdir is never followed.
func makeDir(p string, mode fs.FileMode) error {
	if err := os.Mkdir(p, mode.Perm()); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	err = f.Chmod(mode)
	return errors.Join(err, f.Close())
}
