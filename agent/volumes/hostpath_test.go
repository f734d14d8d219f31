package volumes

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// blockDevice finds a block device on this machine, or "".
func blockDevice() string {
	entries, _ := os.ReadDir("/dev")
	for _, e := range entries {
		p := filepath.Join("/dev", e.Name())
		if info, err := os.Stat(p); err == nil && info.Mode()&fs.ModeDevice != 0 && info.Mode()&fs.ModeCharDevice == 0 {
			return p
		}
	}
	return ""
}

type hostPathCase struct {
	name    string
	path    string
	typ     *v1.HostPathType
	kind    error
	wantMsg string
}

// hostPaths are files of every kind for hostPath checks.
type hostPaths struct {
	dir, file, sock, fifo, linkToDir, missing string
}

// newHostPaths makes them in a fresh temp dir.
func newHostPaths(t *testing.T) hostPaths {
	t.Helper()
	dir := t.TempDir()
	p := hostPaths{
		dir: dir, file: filepath.Join(dir, "file"), sock: filepath.Join(dir, "sock"),
		fifo: filepath.Join(dir, "fifo"), linkToDir: filepath.Join(dir, "link"), missing: filepath.Join(dir, "missing"),
	}
	if err := os.WriteFile(p.file, []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := syscall.Mkfifo(p.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, dir, p.linkToDir)
	return p
}

func TestCheckHostPath(t *testing.T) {
	p := newHostPaths(t)
	block := blockDevice()
	type_ := func(t v1.HostPathType) *v1.HostPathType { return &t }
	tests := []hostPathCase{
		{"nil type checks nothing", p.missing, nil, nil, ""},
		{"unset type checks nothing", p.missing, type_(v1.HostPathUnset), nil, ""},
		{"backsteps", p.dir + "/../etc", nil, ErrInvalidPath, "invalid HostPath `" + p.dir + "/../etc`: must not contain '..'"},
		{"directory", p.dir, type_(v1.HostPathDirectory), nil, ""},
		{"directory through a symlink", p.linkToDir, type_(v1.HostPathDirectory), nil, ""},
		{"directory missing", p.missing, type_(v1.HostPathDirectory), fs.ErrNotExist, "hostPath " + p.missing + " doesn't exist"},
		{"directory is a file", p.file, type_(v1.HostPathDirectory), ErrHostPathType,
			"hostPath type check failed: " + p.file + " is not a directory, it's a File"},
		{"existing directory, or create", p.dir, type_(v1.HostPathDirectoryOrCreate), nil, ""},
		{"file where a directory may be created", p.file, type_(v1.HostPathDirectoryOrCreate), ErrHostPathType,
			"hostPath type check failed: " + p.file + " is not a directory, it's a File"},
		{"file", p.file, type_(v1.HostPathFile), nil, ""},
		{"file is a directory", p.dir, type_(v1.HostPathFile), ErrHostPathType,
			"hostPath type check failed: " + p.dir + " is not a file, it's a Directory"},
		{"existing file, or create", p.file, type_(v1.HostPathFileOrCreate), nil, ""},
		{"directory where a file may be created", p.dir, type_(v1.HostPathFileOrCreate), ErrHostPathType,
			"hostPath type check failed: " + p.dir + " is not a file, it's a Directory"},
		{"file or create needs the directory", filepath.Join(p.missing, "f"), type_(v1.HostPathFileOrCreate), fs.ErrNotExist, ""},
		{"socket", p.sock, type_(v1.HostPathSocket), nil, ""},
		{"socket is a file", p.file, type_(v1.HostPathSocket), ErrHostPathType,
			"hostPath type check failed: " + p.file + " is not a socket file, it's a File"},
		{"char device", "/dev/null", type_(v1.HostPathCharDev), nil, ""},
		{"char device is a socket", p.sock, type_(v1.HostPathCharDev), ErrHostPathType,
			"hostPath type check failed: " + p.sock + " is not a character device, it's a Socket"},
		{"block device is a char device", "/dev/null", type_(v1.HostPathBlockDev), ErrHostPathType,
			"hostPath type check failed: /dev/null is not a block device, it's a CharDevice"},
		{"unknown file type", p.fifo, type_(v1.HostPathFile), ErrHostPathType,
			"hostPath type check failed, " + p.fifo + " is not a file, unable to determine its type"},
		{"invalid type", p.dir, type_("Fifo"), ErrHostPathType, "Fifo is an invalid volume type"},
	}
	if block != "" {
		tests = append(tests,
			hostPathCase{"block device", block, type_(v1.HostPathBlockDev), nil, ""},
			hostPathCase{"char device is a block device", block, type_(v1.HostPathCharDev), ErrHostPathType,
				"hostPath type check failed: " + block + " is not a character device, it's a BlockDevice"})
	} else {
		t.Log("no block device on this machine: BlockDevice success not checked")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, CheckHostPath(tt.path, tt.typ), tt.kind, tt.wantMsg)
		})
	}
	if data, err := os.ReadFile(p.file); err != nil || string(data) != "content" {
		t.Errorf("FileOrCreate touched an existing file: %q, %v", data, err)
	}
	if _, err := os.Stat(p.missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a check without create made %s: %v", p.missing, err)
	}
}

func TestCheckHostPathCreates(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	tests := []struct {
		name string
		typ  v1.HostPathType
		path string // below a fresh temp dir
		want fs.FileMode
	}{
		{"directory with parents", v1.HostPathDirectoryOrCreate, "a/b/c", fs.ModeDir | 0o755},
		{"empty file", v1.HostPathFileOrCreate, "f", 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tt.path)
			for range 2 { // a second check finds what the first made
				if err := CheckHostPath(p, &tt.typ); err != nil {
					t.Fatal(err)
				}
			}
			info, err := os.Stat(p)
			if err != nil || info.Mode() != tt.want {
				t.Fatalf("made %v (%v), want %v whatever the umask", info.Mode(), err, tt.want)
			}
			if !info.IsDir() && info.Size() != 0 {
				t.Errorf("file of %d bytes, want empty", info.Size())
			}
		})
	}
}
