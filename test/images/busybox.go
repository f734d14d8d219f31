// Package images builds the images that skiff's tests run, from what is on
// the test machine (Debian's busybox-static) and from skiff's own sources,
// as OCI image-layout tarballs for containerd's import. No registry is needed.
package images

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/skiff-lab/skiff/cri/imagetar"
)

// BusyboxPath is the host's static busybox that Busybox packs.
const BusyboxPath = "/bin/busybox"

// Busybox returns an OCI tarball of an image named ref built from the host's
// static /bin/busybox with symlinks for its applets (`busybox --list`) in
// /bin, plus /etc/passwd & /etc/group with root and nobody, /tmp; Cmd ["sh"].
func Busybox(ref string) ([]byte, error) {
	return BusyboxFrom(ref, BusyboxPath, "")
}

// BusyboxFrom is Busybox with the static busybox at path, built for arch
// (GOARCH names; "" for this machine's), e.g. an arm64 one from a VM
// image's root. The applets are the host busybox's.
func BusyboxFrom(ref, path, arch string) ([]byte, error) {
	im, err := BusyboxImage(ref, path, arch)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := imagetar.WriteImages(&buf, im); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BusyboxImage is the image BusyboxFrom writes, for a tarball of several
// images or one with more files.
func BusyboxImage(ref, path, arch string) (imagetar.Image, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return imagetar.Image{}, fmt.Errorf("busybox image: %w", err)
	}
	applets, err := busyboxApplets()
	if err != nil {
		return imagetar.Image{}, fmt.Errorf("busybox image: %w", err)
	}
	files := []imagetar.File{
		{Path: "/bin/busybox", Mode: 0o755, Data: bin},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	for _, a := range applets {
		files = append(files, imagetar.File{Path: "/bin/" + a, Link: "busybox"})
	}
	return imagetar.Image{Ref: ref, Files: files, Config: imagetar.Config{
		Architecture: arch,
		Cmd:          []string{"sh"},
		Env:          []string{DefaultPath},
	}}, nil
}

// DefaultPath is the PATH of the images skiff's tests build.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group  = "root:x:0:\nnobody:x:65534:\n"
)

// busyboxApplets lists the applets of the host's busybox, without busybox itself.
func busyboxApplets() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, BusyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", BusyboxPath, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			applets = append(applets, a)
		}
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list printed no applets", BusyboxPath)
	}
	return applets, nil
}
