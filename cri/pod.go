package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/containerd/continuity"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// WritePodFile writes one of the pod's own files (hosts, resolv.conf) and
// returns its path. Rewriting is atomic.
func (r *Runtime) WritePodFile(uid, name string, data []byte) (string, error) {
	dir := r.PodDir(uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create pod dir: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := continuity.AtomicWriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return path, nil
}

// VolumeDir creates, if needed, the directory backing one of the pod's
// volumes, <pod dir>/volumes/<plugin>/<name> (plugin as the kubelet names
// them: kubernetes.io~configmap, …), and returns its path.
func (r *Runtime) VolumeDir(uid, plugin, name string) (string, error) {
	path := r.volumePath(uid, plugin, name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", fmt.Errorf("create volume dir %s: %w", name, err)
	}
	return path, nil
}

func (r *Runtime) volumePath(uid, plugin, name string) string {
	return filepath.Join(r.PodDir(uid), "volumes", plugin, name)
}

// emptyDirPlugin names the directory of emptyDir volumes, as the kubelet's.
const emptyDirPlugin = "kubernetes.io~empty-dir"

// EmptyDir creates, if needed, the directory backing an emptyDir volume,
// writable by every user.
func (r *Runtime) EmptyDir(uid, volume string) (string, error) {
	path, err := r.VolumeDir(uid, emptyDirPlugin, volume)
	if err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o777)
}

// EmptyDirPath is where EmptyDir keeps the volume; it creates nothing.
func (r *Runtime) EmptyDirPath(uid, volume string) string {
	return r.volumePath(uid, emptyDirPlugin, volume)
}

// SetPodResources puts limits on the pod's parent cgroup (a no-op for nil).
// Containers' own cgroups are created under it by runc.
func (r *Runtime) SetPodResources(uid string, res *specs.LinuxResources) error {
	if res == nil {
		return nil
	}
	path := r.podCgroup(uid)
	var err error
	if cgroups.Mode() == cgroups.Unified {
		_, err = cgroup2.NewManager("/sys/fs/cgroup", path, cgroup2.ToResources(res))
	} else {
		_, err = cgroup1.New(cgroup1.StaticPath(path), res)
	}
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", path, err)
	}
	return nil
}

// RemovePod removes what a pod kept on the node besides its containers: its
// files, emptyDirs, logs and parent cgroup. The containers must be gone.
// Removing a pod twice is harmless.
// Memory-backed volumes mounted under the pod's directory are unmounted
// first.
func (r *Runtime) RemovePod(ctx context.Context, pod PodRef) error {
	logs := filepath.Dir(filepath.Dir(r.LogPath(pod, "c", 0)))
	dir := r.PodDir(pod.UID)
	if err := UnmountUnder(dir); err != nil {
		return err
	}
	errs := []error{os.RemoveAll(dir), os.RemoveAll(logs), r.removePodCgroup(pod.UID), r.removeImageVolumes(ctx, pod.UID)}
	return errors.Join(errs...)
}

// RemoveAll removes every container in the runtime's namespace and then
// what their pods kept on the node (RemovePod), telling found of each
// container first: a node taken down, or a test's leftovers.
func (r *Runtime) RemoveAll(ctx context.Context, found func(Container)) error {
	containers, err := r.List(ctx, "")
	if err != nil {
		return err
	}
	var errs []error
	pods := map[string]PodRef{}
	for _, c := range containers {
		found(c)
		errs = append(errs, r.RemoveContainer(ctx, c.ID))
		pods[c.Pod.UID] = c.Pod
	}
	for _, pod := range pods {
		errs = append(errs, r.RemovePod(ctx, pod))
	}
	return errors.Join(errs...)
}

// UnmountUnder unmounts every mount below dir, deepest first, so that
// removing dir does not reach into (or fail on) a mounted filesystem.
func UnmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint …; the mount point is
		// octal-escaped, which paths skiff creates never need.
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return nil
}

func (r *Runtime) removePodCgroup(uid string) error {
	path := r.podCgroup(uid)
	if cgroups.Mode() == cgroups.Unified {
		return removeCgroupDirs(filepath.Join("/sys/fs/cgroup", path))
	}
	var errs []error
	if cg, err := cgroup1.Load(cgroup1.StaticPath(path)); err == nil {
		errs = append(errs, cg.Delete())
	}
	if cgroups.Mode() == cgroups.Hybrid {
		// runc also makes the path in the v2 hierarchy mounted beside the v1 controllers.
		errs = append(errs, removeCgroupDirs(filepath.Join("/sys/fs/cgroup/unified", path)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pod cgroup: %w", err)
	}
	return nil
}

// RemoveCgroupRoot removes the pods' parent cgroup root (cri.Config's
// CgroupRoot) in every hierarchy; its pods' cgroups must be gone.
func RemoveCgroupRoot(root string) error {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + root)
	var errs []error
	for _, dir := range append(dirs, "/sys/fs/cgroup"+root) {
		errs = append(errs, removeCgroupDirs(dir))
	}
	return errors.Join(errs...)
}

// removeCgroupDirs removes an empty cgroup directory tree, children first.
// A missing tree is done.
func removeCgroupDirs(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
