package criserver

import (
	"context"
	"errors"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-lab/skiff/cri"
)

// imageID is the digest part of a repo digest: "sha256:…".
func imageID(img cri.Image) string {
	if _, digest, ok := strings.Cut(img.ID, "@"); ok {
		return digest
	}
	return img.ID
}

func criImage(img cri.Image) *runtimeapi.Image {
	return &runtimeapi.Image{Id: imageID(img), RepoTags: []string{img.Ref}, RepoDigests: []string{img.ID},
		Size: uint64(img.Size), Spec: &runtimeapi.ImageSpec{Image: img.Ref}, Pinned: img.Pinned}
}

func (s *Server) images(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	imgs, err := s.cfg.Runtime.Images(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	var want []cri.Image
	if f != nil && f.Image != nil && f.Image.Image != "" {
		if want, err = lookupImage(imgs, f.Image.Image); err != nil {
			return nil, err
		}
	} else {
		want = imgs
	}
	out := []*runtimeapi.Image{}
	for _, img := range want {
		out = append(out, criImage(img))
	}
	return out, nil
}

// lookupImage finds the images a user's name for one means: a reference
// (normalized as Docker does), a repo digest or an ID or its prefix.
func lookupImage(imgs []cri.Image, name string) ([]cri.Image, error) {
	ref, refErr := cri.NormalizeImage(name)
	var out []cri.Image
	for _, img := range imgs {
		id := imageID(img)
		if refErr == nil && img.Ref == ref || img.ID == name || id == name ||
			strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), strings.TrimPrefix(name, "sha256:")) {
			out = append(out, img)
		}
	}
	if len(out) == 0 && refErr != nil && !isHex(name) {
		return nil, status.Error(codes.InvalidArgument, refErr.Error())
	}
	return out, nil
}

func isHex(s string) bool {
	s = strings.TrimPrefix(s, "sha256:")
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

// ListImages lists the node's images.
func (s *Server) ListImages(ctx context.Context, r *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	imgs, err := s.images(ctx, r.Filter)
	return &runtimeapi.ListImagesResponse{Images: imgs}, err
}

// StreamImages sends ListImages' answer as one message.
func (s *Server) StreamImages(r *runtimeapi.StreamImagesRequest, out grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	imgs, err := s.images(out.Context(), r.Filter)
	return sendAll(out, err, &runtimeapi.StreamImagesResponse{Images: imgs})
}

// ImageStatus describes one image; an absent image is no image and no error.
func (s *Server) ImageStatus(ctx context.Context, r *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	imgs, err := s.images(ctx, &runtimeapi.ImageFilter{Image: r.Image})
	if err != nil || len(imgs) == 0 {
		return &runtimeapi.ImageStatusResponse{}, err
	}
	if len(imgs) > 1 {
		return nil, status.Errorf(codes.InvalidArgument, "%q names %d images", r.Image.GetImage(), len(imgs))
	}
	return &runtimeapi.ImageStatusResponse{Image: imgs[0]}, nil
}

// PullImage pulls an image into the node's store, with the request's
// registry login if it has one.
func (s *Server) PullImage(ctx context.Context, r *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref, err := cri.NormalizeImage(r.Image.GetImage())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var creds cri.Credentials
	if a := r.Auth; a != nil && a.Username != "" {
		host := a.ServerAddress
		if host == "" {
			host, _, _ = strings.Cut(ref, "/")
		}
		creds = cri.Credentials{host: {Username: a.Username, Password: a.Password}}
	}
	img, err := s.cfg.Runtime.Pull(ctx, ref, creds)
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// RemoveImage removes an image by name or ID; removing an absent one is done.
func (s *Server) RemoveImage(ctx context.Context, r *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	imgs, err := s.cfg.Runtime.Images(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	found, err := lookupImage(imgs, r.Image.GetImage())
	if err != nil {
		return nil, err
	}
	for _, img := range found {
		if err := s.cfg.Runtime.RemoveImage(ctx, img.Ref); err != nil {
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the usage of the file system that holds the images.
func (s *Server) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	if s.cfg.ImageFS == "" {
		return nil, status.Error(codes.Unimplemented, "no image file system configured")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.cfg.ImageFS, &st); err != nil {
		return nil, status.Error(codes.Unknown, errors.Join(errors.New("image file system"), err).Error())
	}
	used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
	fs := &runtimeapi.FilesystemUsage{Timestamp: now(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: s.cfg.ImageFS},
		UsedBytes: &runtimeapi.UInt64Value{Value: used}, InodesUsed: &runtimeapi.UInt64Value{Value: st.Files - st.Ffree}}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
