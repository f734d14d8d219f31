package agent

import (
	"context"
	"fmt"

	"github.com/moby/sys/mountinfo"
	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
)

// pluginImage is the kubelet's name of the image volume plugin.
const pluginImage = "kubernetes.io~image"

// imageVolume sets up an image volume once: the image, present by the
// volume's pull policy (pulled with the pod's pull secrets), mounted
// read-only in the volume's directory. A mounted volume is left as it is.
func (s *podSync) imageVolume(ctx context.Context, vol *v1.Volume) error {
	dir, err := s.a.rt.VolumeDir(string(s.pod.UID), pluginImage, vol.Name)
	if err != nil {
		return err
	}
	if mounted, err := mountinfo.Mounted(dir); err != nil || mounted {
		return err
	}
	src := vol.Image
	ref, err := cri.NormalizeImage(src.Reference)
	if err != nil {
		return fmt.Errorf("image %q: %w", src.Reference, err)
	}
	_, lookErr := s.a.rt.Image(ctx, ref)
	present := lookErr == nil
	switch {
	case src.PullPolicy == v1.PullNever && !present:
		return fmt.Errorf("image %q is not present with pull policy of Never", src.Reference)
	case !present || src.PullPolicy == v1.PullAlways:
		s.event(v1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", src.Reference))
		img, err := s.a.rt.Pull(ctx, ref, s.credentials(ctx))
		if err != nil {
			return fmt.Errorf("pull image %q: %w", src.Reference, err)
		}
		s.event(v1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q. Image size: %d bytes.", src.Reference, img.Size))
	}
	return s.a.rt.MountImage(ctx, string(s.pod.UID), vol.Name, ref, dir)
}

// imageVolumeReady says an image volume is mounted.
func (s *podSync) imageVolumeReady(vol *v1.Volume) bool {
	dir, err := s.a.rt.VolumeDir(string(s.pod.UID), pluginImage, vol.Name)
	if err != nil {
		return false
	}
	mounted, err := mountinfo.Mounted(dir)
	return err == nil && mounted
}
