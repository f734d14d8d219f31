package imagetar

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// File is one entry of the image's only layer.
type File struct {
	// Path is absolute or relative to the image root; it is cleaned.
	Path string
	// Mode holds the permission bits, setuid/setgid/sticky and the type
	// (fs.ModeDir for a directory). Zero permission bits mean 0644 for a file,
	// 0755 for a directory.
	Mode fs.FileMode
	// Data is a regular file's content.
	Data []byte
	// Link, if set, makes the entry a symbolic link to Link.
	Link string
}

// epoch is every entry's modification time, so that equal input gives an equal layer.
var epoch = time.Unix(0, 0).UTC()

// layerTar returns an uncompressed layer tar holding files, owned by root.
// Missing parent directories are added (mode 0755, or the mode of an
// explicit directory entry for the same path) before their children.
func layerTar(files []File) ([]byte, error) {
	dirs := map[string]fs.FileMode{}
	for _, f := range files {
		if isDir(f) {
			dirs[cleanPath(f.Path)] = f.Mode
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	written := map[string]byte{} // path → tar type flag
	for _, f := range files {
		name := cleanPath(f.Path)
		if name == "" {
			return nil, fmt.Errorf("file %q: path names the image root", f.Path)
		}
		if err := writeParents(tw, name, dirs, written); err != nil {
			return nil, err
		}
		if typ, ok := written[name]; ok {
			if typ == tar.TypeDir && isDir(f) {
				continue // already written as a parent, with this mode
			}
			return nil, fmt.Errorf("file %q: duplicate path", f.Path)
		}
		h := header(name, f)
		written[name] = h.Typeflag
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		if isRegular(f) {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("write %s: %w", name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeParents writes the directories above name that are not yet written.
func writeParents(tw *tar.Writer, name string, dirs map[string]fs.FileMode, written map[string]byte) error {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if typ, ok := written[dir]; ok {
			if typ != tar.TypeDir {
				return fmt.Errorf("file %q: parent %s is not a directory", name, dir)
			}
			continue
		}
		written[dir] = tar.TypeDir
		mode, ok := dirs[dir]
		if !ok {
			mode = fs.ModeDir | 0o755
		}
		if err := tw.WriteHeader(header(dir, File{Mode: mode})); err != nil {
			return fmt.Errorf("write %s: %w", dir, err)
		}
	}
	return nil
}

// header is the tar header for f stored at name (cleaned, relative).
func header(name string, f File) *tar.Header {
	h := &tar.Header{Name: name, ModTime: epoch, Format: tar.FormatPAX}
	perm := f.Mode.Perm()
	switch {
	case f.Link != "":
		h.Typeflag, h.Linkname, perm = tar.TypeSymlink, f.Link, 0o777
	case isDir(f):
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		if perm == 0 {
			perm = 0o755
		}
	default:
		h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		if perm == 0 {
			perm = 0o644
		}
	}
	h.Mode = int64(perm)
	if f.Mode&fs.ModeSetuid != 0 {
		h.Mode |= 0o4000
	}
	if f.Mode&fs.ModeSetgid != 0 {
		h.Mode |= 0o2000
	}
	if f.Mode&fs.ModeSticky != 0 {
		h.Mode |= 0o1000
	}
	return h
}

func isDir(f File) bool     { return f.Link == "" && f.Mode.IsDir() }
func isRegular(f File) bool { return f.Link == "" && !f.Mode.IsDir() }

// cleanPath makes p relative to the image root: "/bin/../etc/x" → "etc/x".
func cleanPath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}
