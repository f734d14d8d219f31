package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// subPathVolume builds, in a fresh temp dir, a volume and a sibling
// directory outside it:
//
//	vol/dir/           vol/file          vol/in -> dir
//	vol/abs-out -> <outside>             vol/rel-out -> ../outside
//	vol/dir/up -> ..   (still inside)    vol/dangling -> nowhere
//	outside/
func subPathVolume(t *testing.T) (vol, outside string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vol, outside = filepath.Join(root, "vol"), filepath.Join(root, "outside")
	mustMkdir(t, vol)
	mustMkdir(t, outside)
	mustMkdir(t, filepath.Join(vol, "dir"))
	if err := os.WriteFile(filepath.Join(vol, "file"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "dir", filepath.Join(vol, "in"))
	mustSymlink(t, outside, filepath.Join(vol, "abs-out"))
	mustSymlink(t, "../outside", filepath.Join(vol, "rel-out"))
	mustSymlink(t, "..", filepath.Join(vol, "dir", "up"))
	mustSymlink(t, "nowhere", filepath.Join(vol, "dangling"))
	return vol, outside
}

func TestResolveSubPath(t *testing.T) {
	tests := []struct {
		name    string
		subPath string
		want    string // relative to the volume; "" when an error is expected
		kind    error
		wantMsg string
	}{
		{"directory", "dir", "dir", nil, ""},
		{"file", "file", "file", nil, ""},
		{"trailing slash and dot", "./dir/", "dir", nil, ""},
		{"symlink inside", "in", "dir", nil, ""},
		{"symlink back to the volume root", "dir/up", ".", nil, ""},
		{"created when missing", "new/deeper", "new/deeper", nil, ""},
		{"created below a symlink inside", "in/made", "dir/made", nil, ""},
		{"absolute", "/etc", "", ErrInvalidPath, "error SubPath `/etc` must not be an absolute path"},
		{"backstep", "dir/../../outside", "", ErrInvalidPath, "unable to provision SubPath `dir/../../outside`: must not contain '..'"},
		{"absolute symlink out", "abs-out", "", ErrOutsideVolume, ""},
		{"relative symlink out", "rel-out", "", ErrOutsideVolume, ""},
		{"escape then create", "abs-out/new", "", ErrOutsideVolume, ""},
		{"through a file", "file/x", "", syscall.ENOTDIR, ""},
		{"dangling symlink", "dangling", "", fs.ErrNotExist, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vol, outside := subPathVolume(t)
			got, err := ResolveSubPath(vol, tt.subPath)
			if tt.want == "" {
				wantErr(t, err, tt.kind, tt.wantMsg)
				if entries, _ := os.ReadDir(outside); len(entries) != 0 {
					t.Errorf("created %v outside the volume", entries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(vol, tt.want); got != want {
				t.Errorf("resolved to %s, want %s", got, want)
			}
		})
	}
}

func TestResolveSubPathEmpty(t *testing.T) {
	if got, err := ResolveSubPath("/some/volume", ""); got != "/some/volume" || err != nil {
		t.Errorf("got %q, %v; want the volume itself", got, err)
	}
}

func TestResolveSubPathEscapeMessage(t *testing.T) {
	vol, outside := subPathVolume(t)
	_, err := ResolveSubPath(vol, "abs-out")
	want := `subPath abs-out: subpath "` + outside + `" not within volume path "` + vol + `"`
	if !errors.Is(err, ErrOutsideVolume) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestResolveSubPathModes(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	tests := []struct {
		name string
		mode fs.FileMode // of the volume directory
	}{
		{"emptyDir", 0o777},
		{"memory emptyDir", 0o777 | fs.ModeSticky},
		{"fsGroup volume", 0o770 | fs.ModeSetgid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vol := t.TempDir()
			if err := os.Chmod(vol, tt.mode); err != nil {
				t.Fatal(err)
			}
			got, err := ResolveSubPath(vol, "a/b")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Dir(got), got} {
				info, err := os.Stat(p)
				if err != nil || info.Mode() != fs.ModeDir|tt.mode {
					t.Errorf("%s mode %v (%v), want the volume's %v", p, info.Mode(), err, fs.ModeDir|tt.mode)
				}
			}
		})
	}
}

func TestResolveSubPathVolumeBehindSymlink(t *testing.T) {
	vol, _ := subPathVolume(t)
	link := filepath.Join(t.TempDir(), "vol-link")
	mustSymlink(t, vol, link)
	got, err := ResolveSubPath(link, "in")
	if err != nil || got != filepath.Join(vol, "dir") {
		t.Errorf("got %q, %v; want %s", got, err, filepath.Join(vol, "dir"))
	}
}

// TestResolveSubPathOfAtomicVolume checks the common case of a subPath
// naming one key of a configMap volume: it resolves into the current
// version, inside the volume.
func TestResolveSubPathOfAtomicVolume(t *testing.T) {
	vol, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, vol, payloadOf("app.conf", "x=1"))
	got, err := ResolveSubPath(vol, "app.conf")
	if want := filepath.Join(vol, version(t, vol), "app.conf"); err != nil || got != want {
		t.Errorf("got %q, %v; want %s", got, err, want)
	}
}
