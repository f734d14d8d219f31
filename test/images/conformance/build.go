package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// moduleDir is the directory of module mod in the module cache, as the
// module in dir requires it.
func moduleDir(dir, mod string) (string, error) {
	out, err := run(dir, time.Minute, nil, "go", "list", "-m", "-f", "{{.Dir}}", mod)
	if err != nil {
		return "", err
	}
	d := strings.TrimSpace(string(out))
	if d == "" {
		return "", fmt.Errorf("module %s is not downloaded (run go mod download in %s)", mod, dir)
	}
	return d, nil
}

// goBuild builds the main package pkg of the module in dir statically and
// returns the program.
func goBuild(dir, pkg string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "conformance-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, filepath.Base(pkg))
	log.Printf("go build %s", pkg)
	_, err = run(dir, 20*time.Minute, []string{"CGO_ENABLED=0"},
		"go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(bin)
}

// run runs a command in dir with extra environment and a time limit,
// returning its standard output; its standard error is in the error.
func run(dir string, limit time.Duration, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// The Debian root under the images: the tools the upstream images carry
// (agnhost's are Alpine's netcat-openbsd, bind-tools, curl, iproute2,
// iperf, socat, bash, util-linux; glibc-dns-testing's dnsutils; nginx),
// and the user and group agnhost's image defines.
const debianSuite = "bookworm"

var (
	debianPackages = []string{
		"bind9-dnsutils", "curl", "iperf", "iproute2", "iputils-ping", "netcat-openbsd",
		"nginx-light", "procps", "socat", "wget",
	}
	debianHooks = []string{
		`echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$1/etc/passwd"`,
		`echo 'user-defined-in-image:x:1000:' >>"$1/etc/group"`,
		`echo 'group-defined-in-image:x:50000:user-defined-in-image' >>"$1/etc/group"`,
		// nginx logs to the container's output, as the upstream image does.
		`ln -sf /dev/stdout "$1/var/log/nginx/access.log" && ln -sf /dev/stderr "$1/var/log/nginx/error.log"`,
	}
)

// debianRoot returns the Debian root layer (a .tar.gz in cache, built with
// mmdebstrap from the host's mirror if missing) and the hash naming it.
func debianRoot(cache string) (path, key string, err error) {
	mirror, err := aptMirror()
	if err != nil {
		return "", "", err
	}
	args := []string{"--variant=minbase", "--architectures=" + runtime.GOARCH,
		"--include=" + strings.Join(debianPackages, ","), "--skip=output/dev"}
	for _, h := range debianHooks {
		args = append(args, "--customize-hook="+h)
	}
	args = append(args, debianSuite)
	sum := sha256.Sum256([]byte(strings.Join(append(args, mirror), "\n")))
	key = hex.EncodeToString(sum[:])
	path = filepath.Join(cache, "debian-"+key[:16]+".tar.gz")
	if _, err := os.Stat(path); err == nil {
		return path, key, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", err
	}
	tmp := filepath.Join(cache, ".partial-"+key[:16]+".tar.gz")
	defer os.Remove(tmp)
	log.Printf("building the Debian root with mmdebstrap from %s (a minute or two)", mirror)
	if _, err := run(cache, 20*time.Minute, nil, "mmdebstrap", append(args, tmp, mirror)...); err != nil {
		return "", "", err
	}
	return path, key, os.Rename(tmp, path)
}

// aptMirror is the Debian mirror of this machine's apt sources.
func aptMirror() (string, error) {
	for _, src := range []struct{ file, prefix string }{
		{"/etc/apt/sources.list.d/debian.sources", "URIs:"},
		{"/etc/apt/sources.list", "deb"},
	} {
		f, err := os.Open(src.file)
		if err != nil {
			continue
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 2 || fields[0] != src.prefix || strings.Contains(s.Text(), "security") {
				continue
			}
			for _, f := range fields[1:] {
				if strings.HasPrefix(f, "http") {
					return f, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no Debian mirror in this machine's apt sources")
}
