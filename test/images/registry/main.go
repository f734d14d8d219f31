// Command registry serves an OCI image-layout tarball's images from a
// registry (go-containerregistry's, in memory) on addr, each under its
// name without the registry host (registry.k8s.io/e2e-test-images/agnhost:2.66.1
// is addr/e2e-test-images/agnhost:2.66.1), so that nodes given it as a
// mirror (skiff agent --registry-mirror registry.k8s.io=http://addr) pull
// the images of specs that pull with imagePullPolicy Always without the
// internet. It prints "ready" once every image is pushed and serves until
// it is stopped.
//
//	go run ./test/images/registry -listen 10.213.0.254:5000 -images bin/conformance/images/conformance-images.tar
package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:5000", "address to serve the registry on")
	images := flag.String("images", "", "OCI image-layout tarball of the images to serve")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("registry: ")
	if err := run(*listen, *images); err != nil {
		log.Fatal(err)
	}
}

func run(listen, images string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	n, err := pushAll(images, ln.Addr().String())
	if err != nil {
		return err
	}
	log.Printf("%d images on http://%s", n, ln.Addr())
	fmt.Println("ready")
	return <-served
}

// pushAll pushes every image of the tarball to the registry at addr.
func pushAll(tarball, addr string) (int, error) {
	dir, err := os.MkdirTemp("", "registry-images-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := untar(tarball, dir); err != nil {
		return 0, err
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return 0, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return 0, err
	}
	for _, desc := range m.Manifests {
		ref := desc.Annotations["io.containerd.image.name"]
		_, path, ok := strings.Cut(ref, "/")
		if !ok {
			return 0, fmt.Errorf("image %s has no name with a registry", desc.Digest)
		}
		tag, err := name.ParseReference(addr+"/"+path, name.Insecure)
		if err != nil {
			return 0, err
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return 0, err
		}
		if err := remote.Write(tag, img); err != nil {
			return 0, fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return len(m.Manifests), nil
}

// untar unpacks an image-layout tarball (regular files and directories).
func untar(tarball, dir string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
