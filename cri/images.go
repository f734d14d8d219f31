package cri

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/klauspost/compress/zstd"
)

// ErrImageNotPresent says an image is not in the node's store.
var ErrImageNotPresent = errors.New("image not present")

// Image is an image in the node's store.
type Image struct {
	Ref    string // normalized reference, docker.io/library/busybox:latest
	ID     string // repo digest, docker.io/library/busybox@sha256:…
	Size   int64  // unpacked content size in bytes
	Pinned bool   // imported from a tarball: image garbage collection keeps it
}

// LabelPinned marks a pinned image, under containerd CRI's name for it
// (the kubelet's image garbage collection skips what the CRI calls pinned).
const LabelPinned = "io.cri-containerd.pinned"

// NormalizeImage turns a name as users write it into a full reference the
// way Docker does: "nginx" → "docker.io/library/nginx:latest".
func NormalizeImage(name string) (string, error) {
	named, err := reference.ParseDockerRef(name)
	if err != nil {
		return "", fmt.Errorf("invalid image name %q: %w", name, err)
	}
	return named.String(), nil
}

// Image returns the stored image ref names (normalized), or ErrImageNotPresent.
func (r *Runtime) Image(ctx context.Context, ref string) (Image, error) {
	img, err := r.client.GetImage(r.ctx(ctx), ref)
	if errdefs.IsNotFound(err) {
		return Image{}, fmt.Errorf("%s: %w", ref, ErrImageNotPresent)
	}
	if err != nil {
		return Image{}, fmt.Errorf("look up image %s: %w", ref, err)
	}
	return r.describe(ctx, img)
}

func (r *Runtime) describe(ctx context.Context, img containerd.Image) (Image, error) {
	size, err := img.Size(r.ctx(ctx))
	if err != nil {
		return Image{}, fmt.Errorf("size of image %s: %w", img.Name(), err)
	}
	return Image{Ref: img.Name(), ID: repoDigest(img.Name(), img.Target().Digest.String()), Size: size,
		Pinned: img.Labels()[LabelPinned] == "pinned"}, nil
}

func repoDigest(ref, digest string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return digest
	}
	return named.Name() + "@" + digest
}

// Credentials are registry logins by host, as found in dockerconfigjson secrets.
type Credentials map[string]Login

// Login is one registry's user and password.
type Login struct{ Username, Password string }

// Pull fetches and unpacks ref with the given credentials. Registries listed
// as insecure are reached over plain HTTP.
func (r *Runtime) Pull(ctx context.Context, ref string, creds Credentials) (Image, error) {
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: r.registries.Hosts(func(host string) (string, string) {
		login := creds[host]
		return login.Username, login.Password
	}, r.cfg.Insecure)})
	img, err := r.client.Pull(r.ctx(ctx), ref, containerd.WithResolver(resolver), containerd.WithPullUnpack)
	if err != nil {
		return Image{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	return r.describe(ctx, img)
}

// Import loads an OCI or docker-archive tarball and unpacks its images. It
// returns the names imported. They are pinned, as k3s pins its air-gap
// images and containerd the sandbox image: a node that imports its images
// may have no registry to pull them again from, so image garbage
// collection under disk pressure must not remove them.
func (r *Runtime) Import(ctx context.Context, tar io.Reader) ([]string, error) {
	imgs, err := r.client.Import(r.ctx(ctx), tar, containerd.WithAllPlatforms(false),
		containerd.WithImageLabels(map[string]string{LabelPinned: "pinned"}))
	if err != nil {
		return nil, fmt.Errorf("import images: %w", err)
	}
	var names []string
	for _, meta := range imgs {
		img := containerd.NewImage(r.client, meta)
		if err := img.Unpack(r.ctx(ctx), ""); err != nil {
			return names, fmt.Errorf("unpack %s: %w", meta.Name, err)
		}
		names = append(names, meta.Name)
	}
	return names, nil
}

// ImageArchive says name is an image tarball Import can read: .tar, or
// one compressed with gzip (.tar.gz, .tgz) or zstd (.tar.zst, .tzst).
func ImageArchive(name string) bool {
	for _, suffix := range []string{".tar", ".tar.gz", ".tgz", ".tar.zst", ".tzst"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// ImportFile imports the image tarball at path, decompressed as its name
// says (ImageArchive).
func (r *Runtime) ImportFile(ctx context.Context, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tar io.Reader = f
	switch {
	case strings.HasSuffix(path, ".gz"), strings.HasSuffix(path, ".tgz"):
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		tar = gz
	case strings.HasSuffix(path, ".zst"), strings.HasSuffix(path, ".tzst"):
		zr, err := zstd.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		tar = zr
	}
	names, err := r.Import(ctx, tar)
	if err != nil {
		return names, fmt.Errorf("%s: %w", path, err)
	}
	return names, nil
}

// Images lists the images in the node's store.
func (r *Runtime) Images(ctx context.Context) ([]Image, error) {
	imgs, err := r.client.ListImages(r.ctx(ctx))
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		d, err := r.describe(ctx, img)
		if err != nil {
			continue // content going away while we look
		}
		out = append(out, d)
	}
	return out, nil
}

// RemoveImage deletes an image and lets containerd collect its content.
// A missing image is done.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) error {
	err := r.client.ImageService().Delete(r.ctx(ctx), ref, images.SynchronousDelete())
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}
