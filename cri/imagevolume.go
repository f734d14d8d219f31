package cri

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/errdefs"
	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/image-spec/identity"
)

// labelVolumePod marks an image volume's snapshot with the UID of its pod,
// so that RemovePod finds it.
const labelVolumePod = "io.skiff.image-volume.pod-uid"

// MountImage mounts the root filesystem of image ref (pulled and unpacked)
// read-only at dir, as the kubelet's image volumes: a view snapshot of it,
// named after the pod and the volume, kept (a garbage-collection root)
// until RemovePod. A dir already mounted is left as it is.
func (r *Runtime) MountImage(ctx context.Context, podUID, volume, ref, dir string) error {
	if mounted, err := mountinfo.Mounted(dir); err != nil || mounted {
		return err
	}
	ctx = r.ctx(ctx)
	img, err := r.client.GetImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("image volume %q: %w", ref, err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("image volume %q: %w", ref, err)
	}
	sn := r.client.SnapshotService(defaults.DefaultSnapshotter)
	key := "image-volume-" + podUID + "-" + volume
	labels := map[string]string{labelVolumePod: podUID, "containerd.io/gc.root": time.Now().UTC().Format(time.RFC3339)}
	mounts, err := sn.View(ctx, key, identity.ChainID(diffIDs).String(), snapshots.WithLabels(labels))
	if errdefs.IsAlreadyExists(err) {
		mounts, err = sn.Mounts(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("image volume %q: snapshot: %w", ref, err)
	}
	if err := mount.All(mounts, dir); err != nil {
		return fmt.Errorf("image volume %q: mount: %w", ref, err)
	}
	return nil
}

// ImageVolumes lists the snapshots of the pod's image volumes.
func (r *Runtime) ImageVolumes(ctx context.Context, podUID string) ([]string, error) {
	var keys []string
	err := r.client.SnapshotService(defaults.DefaultSnapshotter).Walk(r.ctx(ctx), func(_ context.Context, info snapshots.Info) error {
		keys = append(keys, info.Name)
		return nil
	}, fmt.Sprintf(`labels."%s"==%q`, labelVolumePod, podUID))
	return keys, err
}

// removeImageVolumes removes the snapshots of the pod's image volumes
// (unmounted first by RemovePod).
func (r *Runtime) removeImageVolumes(ctx context.Context, podUID string) error {
	keys, err := r.ImageVolumes(ctx, podUID)
	sn := r.client.SnapshotService(defaults.DefaultSnapshotter)
	for _, key := range keys {
		if rerr := sn.Remove(r.ctx(ctx), key); rerr != nil && !errdefs.IsNotFound(rerr) && err == nil {
			err = rerr
		}
	}
	return err
}
