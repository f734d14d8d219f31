package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// File is one file of a volume's payload: its content and its permission
// bits (bits outside 0777 are ignored).
type File struct {
	Data []byte
	Mode fs.FileMode
}

// Names WriteAtomic reserves in a volume directory: every name starting
// with ".." belongs to it.
const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
	versionFmt  = "..2006_01_02_15_04_05."
)

// WriteOption changes how WriteAtomic writes.
type WriteOption func(*writeConfig)

type writeConfig struct {
	fsGroup *int
}

// WithFSGroup applies a pod's securityContext.fsGroup the way the kubelet
// does for its read-only volumes: the volume directory and everything
// WriteAtomic writes belong to group gid, files gain group read
// (mode|0440) and directories group read and search plus setgid
// (mode|02550). Changing the group needs CAP_CHOWN.
func WithFSGroup(gid int64) WriteOption {
	return func(c *writeConfig) {
		g := int(gid)
		c.fsGroup = &g
	}
}

// fileMode is the mode a payload file gets on disk.
func (c writeConfig) fileMode(m fs.FileMode) fs.FileMode {
	m &= fs.ModePerm
	if c.fsGroup != nil {
		m |= 0o440
	}
	return m
}

// ownDir gives a directory WriteAtomic made (or the volume directory) its
// mode and, with an fsGroup, its group.
func (c writeConfig) ownDir(dir string, mode fs.FileMode) error {
	if c.fsGroup != nil {
		if err := os.Lchown(dir, -1, *c.fsGroup); err != nil {
			return err
		}
		mode |= 0o550 | fs.ModeSetgid
	}
	return os.Chmod(dir, mode)
}

// WriteAtomic makes dir hold exactly payload, whose keys are slash-separated
// relative paths, and reports whether anything had to change.
//
// The layout is the kubelet's: files live in a hidden directory
// "..<timestamp>.<random>", the symlink "..data" points at it, and each
// top-level name is a symlink "<name> -> ..data/<name>". A new version is
// written in full to a new hidden directory and published by renaming a
// fresh "..data_tmp" symlink over "..data", so a reader that goes through
// "..data" sees one whole version, never a mix or a partly written file.
// After the swap, names that left the payload, older versions and leftovers
// of an interrupted write are removed. Like the kubelet, WriteAtomic removes
// the old version at once: an open that was resolving a path through it at
// that instant fails with ENOENT, and succeeds when retried.
//
// When dir already holds the payload (content, mode and, with WithFSGroup,
// group) nothing is rewritten and changed is false; missing or stale
// top-level symlinks are still repaired. dir is created if missing; entries
// WriteAtomic did not make are left alone, except names starting with "..",
// which it reserves. Concurrent readers are safe; calls for the same dir
// must not run concurrently.
func WriteAtomic(dir string, payload map[string]File, opts ...WriteOption) (changed bool, err error) {
	var cfg writeConfig
	for _, o := range opts {
		o(&cfg)
	}
	files, err := cleanPayload(payload)
	if err != nil {
		return false, err
	}
	if err := prepareDir(dir, cfg); err != nil {
		return false, err
	}
	same, err := holds(dir, files, cfg)
	if err != nil {
		return false, err
	}
	if !same {
		if err := publish(dir, files, cfg); err != nil {
			return false, err
		}
	}
	if err := linkNames(dir, files, cfg); err != nil {
		return !same, err
	}
	return !same, prune(dir, files)
}

// prepareDir creates the volume directory if needed and applies the
// fsGroup to it.
func prepareDir(dir string, cfg writeConfig) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create volume dir: %w", err)
	}
	if cfg.fsGroup == nil {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("volume dir: %w", err)
	}
	if err := cfg.ownDir(dir, info.Mode()&(fs.ModePerm|fs.ModeSticky)); err != nil {
		return fmt.Errorf("set fsGroup on volume dir: %w", err)
	}
	return nil
}

// currentVersion is the name of the hidden directory "..data" points at,
// or "" when there is none (or the link is not one WriteAtomic made).
func currentVersion(dir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, dataLink))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", dataLink, err)
	}
	if !isVersionName(target) {
		return "", nil
	}
	return target, nil
}

// isVersionName reports whether name can be one of WriteAtomic's hidden
// version directories.
func isVersionName(name string) bool {
	return strings.HasPrefix(name, "..") && !strings.Contains(name, "/") &&
		name != dataLink && name != dataLinkTmp && name != ".."
}

// errDiffers stops the walk in holds at the first difference.
var errDiffers = errors.New("differs")

// holds reports whether the version "..data" points at has exactly the
// payload's files, with their content, mode and (with an fsGroup) group.
func holds(dir string, files map[string]File, cfg writeConfig) (bool, error) {
	version, err := currentVersion(dir)
	if err != nil || version == "" {
		return false, err
	}
	root := filepath.Join(dir, version)
	seen := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f, ok := files[filepath.ToSlash(rel)]
		if !ok || !d.Type().IsRegular() {
			return errDiffers
		}
		seen++
		return sameFile(p, f, cfg)
	})
	switch {
	case errors.Is(err, errDiffers), errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("compare with current version: %w", err)
	}
	return seen == len(files), nil
}

// sameFile returns errDiffers unless the file at p is what f and cfg ask for.
func sameFile(p string, f File, cfg writeConfig) error {
	info, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != cfg.fileMode(f.Mode) || info.Size() != int64(len(f.Data)) {
		return errDiffers
	}
	if cfg.fsGroup != nil {
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || int(st.Gid) != *cfg.fsGroup {
			return errDiffers
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !bytes.Equal(data, f.Data) {
		return errDiffers
	}
	return nil
}

// publish writes files to a new hidden version directory and swaps
// "..data" to it. On failure the new version is removed and "..data" still
// points at the old one.
func publish(dir string, files map[string]File, cfg writeConfig) (err error) {
	version, err := os.MkdirTemp(dir, time.Now().UTC().Format(versionFmt))
	if err != nil {
		return fmt.Errorf("create version dir: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(version))
		}
	}()
	if err := writeVersion(version, files, cfg); err != nil {
		return err
	}
	tmp := filepath.Join(dir, dataLinkTmp)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", dataLinkTmp, err)
	}
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		return fmt.Errorf("link new version: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return errors.Join(fmt.Errorf("publish new version: %w", err), os.Remove(tmp))
	}
	return nil
}

// writeVersion fills the fresh directory root with files, giving each its
// mode whatever the umask, and applying the fsGroup.
func writeVersion(root string, files map[string]File, cfg writeConfig) error {
	if err := cfg.ownDir(root, 0o755); err != nil {
		return fmt.Errorf("version dir: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := makeParents(root, name, cfg); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(root, filepath.FromSlash(name)), files[name], cfg); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// makeParents creates the directories above name inside root (0755).
func makeParents(root, name string, cfg writeConfig) error {
	var dirs []string
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	for _, d := range slices.Backward(dirs) {
		p := filepath.Join(root, filepath.FromSlash(d))
		err := os.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			err = cfg.ownDir(p, 0o755)
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

// writeFile writes one payload file at p with its mode and group.
func writeFile(p string, f File, cfg writeConfig) error {
	mode := cfg.fileMode(f.Mode)
	if err := os.WriteFile(p, f.Data, mode); err != nil {
		return err
	}
	if cfg.fsGroup != nil {
		if err := os.Lchown(p, -1, *cfg.fsGroup); err != nil {
			return err
		}
	}
	return os.Chmod(p, mode)
}

// topNames are the sorted first elements of the payload's paths: the names
// visible at the top of the volume.
func topNames(files map[string]File) []string {
	var names []string
	for p := range files {
		name, _, _ := strings.Cut(p, "/")
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// linkNames makes each top-level name of files a symlink into "..data",
// replacing a symlink that points elsewhere. Any other entry in the way
// is an error.
func linkNames(dir string, files map[string]File, cfg writeConfig) error {
	for _, name := range topNames(files) {
		p := filepath.Join(dir, name)
		want := dataLink + "/" + name
		target, err := os.Readlink(p)
		switch {
		case err == nil && target == want:
			continue
		case err == nil:
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("replace link %s: %w", name, err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("volume entry %s is in the way: %w", name, err)
		}
		if err := os.Symlink(want, p); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		if cfg.fsGroup != nil {
			if err := os.Lchown(p, -1, *cfg.fsGroup); err != nil {
				return fmt.Errorf("link %s: %w", name, err)
			}
		}
	}
	return nil
}

// prune removes what WriteAtomic made that the payload no longer needs:
// versions other than the current one, a leftover "..data_tmp", and
// top-level symlinks of names that left the payload.
func prune(dir string, files map[string]File) error {
	current, err := currentVersion(dir)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list volume dir: %w", err)
	}
	keep := topNames(files)
	var errs []error
	for _, e := range entries {
		name, p := e.Name(), filepath.Join(dir, e.Name())
		switch {
		case name == dataLink || name == current:
		case strings.HasPrefix(name, ".."):
			errs = append(errs, os.RemoveAll(p))
		case !isKept(keep, name) && isNameLink(p, name):
			errs = append(errs, os.Remove(p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prune volume dir: %w", err)
	}
	return nil
}

// isKept reports whether name is in the sorted list keep.
func isKept(keep []string, name string) bool {
	_, ok := slices.BinarySearch(keep, name)
	return ok
}

// isNameLink reports whether p is the symlink WriteAtomic makes for name.
func isNameLink(p, name string) bool {
	target, err := os.Readlink(p)
	return err == nil && target == dataLink+"/"+name
}
