package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// WritePodFile writes one of the pod's own files (hosts, resolv.conf) and
// returns its path. Rewriting is atomic.
func (r *Runtime) WritePodFile(uid, name string, data []byte) (string, error) {
	dir := r.PodDir(uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create pod dir: %w", err)
	}
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return path, nil
}

// EmptyDir creates, if needed, the directory backing an emptyDir volume.
func (r *Runtime) EmptyDir(uid, volume string) (string, error) {
	path := filepath.Join(r.PodDir(uid), "volumes", "kubernetes.io~empty-dir", volume)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return "", fmt.Errorf("create emptyDir %s: %w", volume, err)
	}
	return path, os.Chmod(path, 0o777)
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
func (r *Runtime) RemovePod(ctx context.Context, pod PodRef) error {
	logs := filepath.Dir(filepath.Dir(r.LogPath(pod, "c", 0)))
	errs := []error{os.RemoveAll(r.PodDir(pod.UID)), os.RemoveAll(logs), r.removePodCgroup(pod.UID)}
	return errors.Join(errs...)
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
