package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The suite's busybox image is upstream busybox, whose ash passes on
// environment variables whose names are not shell names (`data-1`: the
// ConfigMap and Secret env specs print them with `sh -c env`). Debian's
// busybox drops them (its patch for the installer reverts upstream's
// change) unless FEATURE_DI_ENV_HACK is set, which restores upstream's
// import. So the image's busybox is Debian's source package built with
// Debian's static configuration and that one option.
const (
	busyboxSource = "busybox"
	busyboxConfig = "debian/config/pkg/static"
	busyboxOption = "CONFIG_FEATURE_DI_ENV_HACK"
)

// busyboxBinary returns a static busybox built from the source package of
// the host's mirror (cached in cache by the hash of what makes it).
func busyboxBinary(cache string) (string, error) {
	mirror, err := aptMirror()
	if err != nil {
		return "", err
	}
	recipe := strings.Join([]string{mirror, debianSuite, busyboxSource, busyboxConfig, busyboxOption, runtime.GOARCH}, "\n")
	sum := sha256.Sum256([]byte(recipe))
	path := filepath.Join(cache, "busybox-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(cache, ".busybox-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	log.Printf("building busybox from Debian's source package (%s, a minute or two)", mirror)
	if err := fetchSource(work, mirror, busyboxSource); err != nil {
		return "", err
	}
	bin, err := makeBusybox(work)
	if err != nil {
		return "", err
	}
	if err := os.Rename(bin, path+".partial"); err != nil {
		return "", err
	}
	return path, os.Rename(path+".partial", path)
}

// fetchSource downloads and unpacks (dpkg-source) the source package pkg
// into work/src, with apt lists of its own: the machine's apt
// configuration is not touched.
func fetchSource(work, mirror, pkg string) error {
	sources := filepath.Join(work, "sources.list")
	line := fmt.Sprintf("deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", mirror, debianSuite)
	if err := os.WriteFile(sources, []byte(line), 0o644); err != nil {
		return err
	}
	lists := filepath.Join(work, "lists")
	if err := os.MkdirAll(filepath.Join(lists, "partial"), 0o755); err != nil {
		return err
	}
	apt := []string{"-q", "-o", "Dir::Etc::SourceList=" + sources, "-o", "Dir::Etc::SourceParts=-",
		"-o", "Dir::State::Lists=" + lists, "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache="}
	if _, err := run(work, 10*time.Minute, nil, "apt-get", append(apt, "update")...); err != nil {
		return err
	}
	_, err := run(work, 10*time.Minute, nil, "apt-get", append(apt, "source", pkg)...)
	if err != nil {
		return err
	}
	dirs, _ := filepath.Glob(filepath.Join(work, pkg+"-*"))
	if len(dirs) != 1 {
		return fmt.Errorf("apt-get source %s: want one source tree in %s, found %v", pkg, work, dirs)
	}
	return os.Rename(dirs[0], filepath.Join(work, "src"))
}

// makeBusybox configures and builds busybox out of the tree in work/src,
// as Debian's rules do for the static flavour, and returns the program.
func makeBusybox(work string) (string, error) {
	src, out := filepath.Join(work, "src"), filepath.Join(work, "out")
	config, err := os.ReadFile(filepath.Join(src, busyboxConfig))
	if err != nil {
		return "", err
	}
	off := "# " + busyboxOption + " is not set"
	if !strings.Contains(string(config), off) {
		return "", fmt.Errorf("%s does not have %q: the source package changed", busyboxConfig, off)
	}
	config = []byte(strings.Replace(string(config), off, busyboxOption+"=y", 1))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, ".config"), config, 0o644); err != nil {
		return "", err
	}
	mk := []string{"-C", out, "-f", filepath.Join(src, "Makefile"), "KBUILD_SRC=" + src}
	oldconfig := append([]string{"-c", `yes "" | make "$@" silentoldconfig`, "sh"}, mk...)
	if _, err := run(work, 5*time.Minute, nil, "sh", oldconfig...); err != nil {
		return "", err
	}
	jobs := fmt.Sprintf("-j%d", runtime.NumCPU())
	if _, err := run(work, 20*time.Minute, nil, "make", append(mk, jobs, "all", "SKIP_STRIP=y")...); err != nil {
		return "", err
	}
	return filepath.Join(out, "busybox"), nil
}
