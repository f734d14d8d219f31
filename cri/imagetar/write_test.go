package imagetar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestWriteReadBack(t *testing.T) {
	files := []File{
		{Path: "/bin/tool", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "/bin/alias", Link: "tool"},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	cfg := Config{
		Entrypoint: []string{"/bin/tool"},
		Cmd:        []string{"-x"},
		Env:        []string{"PATH=/bin"},
		WorkingDir: "/tmp",
		User:       "65534",
	}
	var buf bytes.Buffer
	if err := Write(&buf, "skiff.local/test/tool:v1", files, cfg); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(untar(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	wantAnn := map[string]string{
		"io.containerd.image.name":          "skiff.local/test/tool:v1",
		"org.opencontainers.image.ref.name": "v1",
	}
	if !reflect.DeepEqual(desc.Annotations, wantAnn) {
		t.Errorf("annotations = %v, want %v", desc.Annotations, wantAnn)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s", desc.MediaType)
	}
	if p := desc.Platform; p == nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
		t.Errorf("platform = %v", p)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, img, cfg)
	checkLayer(t, img, map[string]entry{
		"bin/":       {tar.TypeDir, 0o755, ""},
		"bin/tool":   {tar.TypeReg, 0o755, "#!/bin/sh\n"},
		"bin/alias":  {tar.TypeSymlink, 0o777, "tool"},
		"etc/":       {tar.TypeDir, 0o755, ""},
		"etc/passwd": {tar.TypeReg, 0o644, "root:x:0:0:root:/root:/bin/sh\n"},
		"tmp/":       {tar.TypeDir, 0o1777, ""},
	})
}

func checkConfig(t *testing.T, img v1.Image, want Config) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config platform = %s/%s", cf.OS, cf.Architecture)
	}
	got := Config{
		Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd, Env: cf.Config.Env,
		WorkingDir: cf.Config.WorkingDir, User: cf.Config.User,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config = %+v, want %+v", got, want)
	}
	if n := len(cf.RootFS.DiffIDs); n != 1 {
		t.Errorf("config has %d diff IDs, want 1", n)
	}
}

// entry is what the test expects of a layer tar entry; body is the data or link target.
type entry struct {
	typ  byte
	mode int64
	body string
}

func checkLayer(t *testing.T, img v1.Image, want map[string]entry) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type = %s", mt)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := readEntries(t, rc)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer entries:\n got %v\nwant %v", got, want)
	}
}

// readEntries reads a layer tar, checking that parents come before children.
func readEntries(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	got := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if dir := filepath.Dir(filepath.Clean(h.Name)); dir != "." {
			if _, ok := got[dir+"/"]; !ok {
				t.Errorf("%s comes before its parent %s", h.Name, dir)
			}
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		body := h.Linkname
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			body = string(b)
		}
		got[h.Name] = entry{h.Typeflag, h.Mode, body}
	}
}

// untar unpacks an image-layout tarball into a temporary directory.
func untar(t *testing.T, b []byte) string {
	t.Helper()
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
		default:
			t.Fatalf("unexpected entry %s of type %c in image layout", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	files := []File{{Path: "/pause", Mode: 0o755, Data: []byte("x")}}
	digest := func() v1.Hash {
		var buf bytes.Buffer
		if err := Write(&buf, "skiff.local/pause:3", files, Config{Entrypoint: []string{"/pause"}}); err != nil {
			t.Fatal(err)
		}
		idx, err := layout.ImageIndexFromPath(untar(t, buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		return im.Manifests[0].Digest
	}
	if a, b := digest(), digest(); a != b {
		t.Errorf("digests differ: %s, %s", a, b)
	}
}

func TestWriteRejects(t *testing.T) {
	ok := []File{{Path: "/a", Data: []byte("a")}}
	tests := []struct {
		name  string
		ref   string
		files []File
	}{
		{"no tag", "skiff.local/pause", ok},
		{"no registry", "busybox:latest", ok},
		{"digest", "skiff.local/pause@sha256:" + string(bytes.Repeat([]byte("0"), 64)), ok},
		{"root path", "skiff.local/x:1", []File{{Path: "/"}}},
		{"duplicate", "skiff.local/x:1", []File{{Path: "/a"}, {Path: "a"}}},
		{"file then dir", "skiff.local/x:1", []File{{Path: "/a"}, {Path: "/a", Mode: fs.ModeDir}}},
		{"file as parent", "skiff.local/x:1", []File{{Path: "/a"}, {Path: "/a/b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Write(io.Discard, tt.ref, tt.files, Config{}); err == nil {
				t.Error("Write succeeded, want an error")
			}
		})
	}
}

func TestLayerTarParents(t *testing.T) {
	tests := []struct {
		name  string
		files []File
		want  map[string]entry
	}{{
		name:  "deep file gets every parent",
		files: []File{{Path: "usr/local/bin/x", Mode: 0o700}},
		want: map[string]entry{
			"usr/":            {tar.TypeDir, 0o755, ""},
			"usr/local/":      {tar.TypeDir, 0o755, ""},
			"usr/local/bin/":  {tar.TypeDir, 0o755, ""},
			"usr/local/bin/x": {tar.TypeReg, 0o700, ""},
		},
	}, {
		name: "explicit directory listed after its child keeps its mode",
		files: []File{
			{Path: "/tmp/x", Data: []byte("1")},
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		},
		want: map[string]entry{
			"tmp/":  {tar.TypeDir, 0o1777, ""},
			"tmp/x": {tar.TypeReg, 0o644, "1"},
		},
	}, {
		name:  "setuid and cleaned paths",
		files: []File{{Path: "/bin/../sbin//su", Mode: fs.ModeSetuid | 0o755}},
		want: map[string]entry{
			"sbin/":   {tar.TypeDir, 0o755, ""},
			"sbin/su": {tar.TypeReg, 0o4755, ""},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := layerTar(tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if got := readEntries(t, bytes.NewReader(b)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("entries:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestWriteImagesShareABaseLayer(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := writeGzipLayer(base, []File{{Path: "/etc/os-release", Data: []byte("ID=debian\n")}}); err != nil {
		t.Fatal(err)
	}
	one := Image{Ref: "skiff.local/one:1", Files: []File{{Path: "/one", Data: []byte("1")}},
		Config: Config{Cmd: []string{"one"}, BaseLayers: []string{base}}}
	two := Image{Ref: "skiff.local/two:2", Files: []File{{Path: "/two", Data: []byte("2")}},
		Config: Config{Cmd: []string{"two"}, StopSignal: "SIGQUIT", BaseLayers: []string{base}}}
	var buf bytes.Buffer
	if err := WriteImages(&buf, one, two); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(untar(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 2 {
		t.Fatalf("index manifests = %v, %v; want 2", im, err)
	}
	var baseDigests []v1.Hash
	for i, want := range []Image{one, two} {
		desc := im.Manifests[i]
		if got := desc.Annotations["io.containerd.image.name"]; got != want.Ref {
			t.Errorf("manifest %d names %s, want %s", i, got, want.Ref)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("%s: layers = %d, %v; want 2", want.Ref, len(layers), err)
		}
		d, err := layers[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		baseDigests = append(baseDigests, d)
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		if got := readEntries(t, rc); got["etc/os-release"].body != "ID=debian\n" {
			t.Errorf("%s: base layer entries %v", want.Ref, got)
		}
		rc.Close()
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cf.Config.Cmd, want.Config.Cmd) || cf.Config.StopSignal != want.Config.StopSignal {
			t.Errorf("%s: config %+v", want.Ref, cf.Config)
		}
	}
	if baseDigests[0] != baseDigests[1] {
		t.Errorf("the two images' base layers differ: %v", baseDigests)
	}
}

// writeGzipLayer writes files as a gzip layer tarball at path.
func writeGzipLayer(path string, files []File) error {
	data, err := layerTar(files)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
