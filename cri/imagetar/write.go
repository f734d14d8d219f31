// Package imagetar writes small single-layer OCI images as OCI image-layout
// tarballs that containerd's image import (client.Import) accepts, for
// images skiff builds itself: the pause image and test images.
package imagetar

import (
	"archive/tar"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Config is the part of the OCI image config that skiff sets.
type Config struct {
	Entrypoint, Cmd, Env []string
	WorkingDir, User     string
	StopSignal           string
	// Architecture of the image's files (GOARCH names); default this
	// program's.
	Architecture string
	// BaseLayers are layer tarballs (plain or gzip) on disk, bottom first,
	// under the layer of the image's files: a root filesystem built by
	// another tool. Images of one Write that name the same file share its
	// blob.
	BaseLayers []string
}

// Image is one image of a tarball: its full reference (such as
// "docker.io/library/busybox:latest" or "skiff.local/pause:3"), the files
// of its top layer (see File) and its config.
type Image struct {
	Ref    string
	Files  []File
	Config Config
}

// Annotations on the image's descriptor in index.json, read by containerd's import.
const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// Write writes an OCI image-layout tarball holding one image named ref
// whose top layer is made of files. Equal input gives equal image digests.
func Write(w io.Writer, ref string, files []File, cfg Config) error {
	return WriteImages(w, Image{Ref: ref, Files: files, Config: cfg})
}

// WriteImages writes an OCI image-layout tarball holding images, each
// named by its reference in index.json; blobs they share are stored once.
func WriteImages(w io.Writer, images ...Image) error {
	dir, err := os.MkdirTemp("", "imagetar-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write image layout: %w", err)
	}
	for _, im := range images {
		if err := appendImage(lp, im); err != nil {
			return err
		}
	}
	return tarDir(w, dir)
}

// appendImage builds im and adds it to the layout lp.
func appendImage(lp layout.Path, im Image) error {
	tag, err := name.NewTag(im.Ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", im.Ref, err)
	}
	img, err := buildImage(im.Files, im.Config)
	if err != nil {
		return fmt.Errorf("build image %s: %w", im.Ref, err)
	}
	err = lp.AppendImage(img,
		layout.WithPlatform(im.Config.platform()),
		layout.WithAnnotations(map[string]string{
			annotationImageName: im.Ref,
			annotationRefName:   tag.TagStr(),
		}))
	if err != nil {
		return fmt.Errorf("write image %s to layout: %w", im.Ref, err)
	}
	return nil
}

// buildImage returns the OCI image (manifest, config, one gzip layer).
func buildImage(files []File, cfg Config) (v1.Image, error) {
	data, err := layerTar(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	layers, err := baseLayers(cfg.BaseLayers)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, append(layers, layer)...)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	p := cfg.platform()
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Config.Entrypoint = cfg.Entrypoint
	cf.Config.Cmd = cfg.Cmd
	cf.Config.Env = cfg.Env
	cf.Config.WorkingDir = cfg.WorkingDir
	cf.Config.User = cfg.User
	cf.Config.StopSignal = cfg.StopSignal
	return mutate.ConfigFile(img, cf)
}

// baseLayers opens the layer tarballs at paths (gzip is detected and kept).
func baseLayers(paths []string) ([]v1.Layer, error) {
	var layers []v1.Layer
	for _, p := range paths {
		l, err := tarball.LayerFromFile(p, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, fmt.Errorf("base layer %s: %w", p, err)
		}
		layers = append(layers, l)
	}
	return layers, nil
}

func (cfg Config) platform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: cmp.Or(cfg.Architecture, runtime.GOARCH)}
}

// tarDir writes the image-layout directory dir as a tar stream.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		return fmt.Errorf("tar image layout: %w", err)
	}
	return tw.Close()
}
