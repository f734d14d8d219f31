package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestBusybox(t *testing.T) {
	if _, err := os.Stat(BusyboxPath); err != nil {
		t.Skipf("no busybox: %v", err)
	}
	b, err := Busybox("docker.io/library/busybox:latest")
	if err != nil {
		t.Fatal(err)
	}
	cf, files := readImage(t, b, "docker.io/library/busybox:latest")
	if want := []string{"sh"}; !reflect.DeepEqual(cf.Config.Cmd, want) {
		t.Errorf("Cmd = %q, want %q", cf.Config.Cmd, want)
	}
	for name, want := range map[string]string{
		"bin/sh":   "busybox",
		"bin/ls":   "busybox",
		"bin/echo": "busybox",
	} {
		if h, ok := files[name]; !ok || h.Typeflag != tar.TypeSymlink || h.Linkname != want {
			t.Errorf("%s = %+v, want a symlink to %s", name, h, want)
		}
	}
	for name, mode := range map[string]int64{"bin/busybox": 0o755, "etc/passwd": 0o644, "etc/group": 0o644, "tmp/": 0o1777} {
		if h, ok := files[name]; !ok || h.Mode != mode {
			t.Errorf("%s: present %v, mode %o; want mode %o", name, ok, h.Mode, mode)
		}
	}
}

func TestPause(t *testing.T) {
	if testing.Short() {
		t.Skip("builds skiff-pause with go build")
	}
	bin, err := PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("skiff-pause is not ELF: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("skiff-pause is dynamically linked")
		}
	}
	again, err := PauseBinary()
	if err != nil || &again[0] != &bin[0] {
		t.Errorf("second PauseBinary built again (err %v)", err)
	}

	img, err := Pause("skiff.local/pause:test")
	if err != nil {
		t.Fatal(err)
	}
	cf, files := readImage(t, img, "skiff.local/pause:test")
	if want := []string{"/pause"}; !reflect.DeepEqual(cf.Config.Entrypoint, want) {
		t.Errorf("Entrypoint = %q, want %q", cf.Config.Entrypoint, want)
	}
	if h, ok := files["pause"]; !ok || h.Size != int64(len(bin)) || h.Mode != 0o755 {
		t.Errorf("/pause = %+v, want %d bytes, mode 755", h, len(bin))
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root + "/cmd/skiff-pause"); err != nil {
		t.Errorf("module root %s has no cmd/skiff-pause: %v", root, err)
	}
}

// readImage reads an OCI image-layout tarball in memory: it checks that
// index.json names ref, and returns the image's config and layer headers.
func readImage(t *testing.T, b []byte, ref string) (*v1.ConfigFile, map[string]*tar.Header) {
	t.Helper()
	blobs := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if blobs[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	blob := func(d v1.Hash) io.Reader { return bytes.NewReader(blobs["blobs/"+d.Algorithm+"/"+d.Hex]) }
	idx, err := v1.ParseIndexManifest(bytes.NewReader(blobs["index.json"]))
	if err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v, %+v", err, idx)
	}
	if got := idx.Manifests[0].Annotations["io.containerd.image.name"]; got != ref {
		t.Errorf("image name = %q, want %q", got, ref)
	}
	m, err := v1.ParseManifest(blob(idx.Manifests[0].Digest))
	if err != nil || len(m.Layers) != 1 {
		t.Fatalf("manifest: %v, %+v", err, m)
	}
	cf, err := v1.ParseConfigFile(blob(m.Config.Digest))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(blob(m.Layers[0].Digest))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	lr := tar.NewReader(zr)
	for {
		h, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return cf, files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
}
