package images

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skiff-lab/skiff/cri/imagetar"
)

const modulePath = "github.com/skiff-lab/skiff"

// PauseBinary builds ./cmd/skiff-pause (CGO_ENABLED=0, -trimpath,
// -ldflags=-s -w) once per process with `go build` and returns its bytes.
// The module root is found by walking up from the working directory to
// skiff's go.mod. Safe for concurrent use; the result is shared, do not modify it.
func PauseBinary() ([]byte, error) { return pauseBinary() }

var pauseBinary = sync.OnceValues(buildPause)

// Pause returns an OCI tarball of an image named ref holding only /pause
// (the binary from PauseBinary) as its entrypoint.
func Pause(ref string) ([]byte, error) {
	bin, err := PauseBinary()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = imagetar.Write(&buf, ref,
		[]imagetar.File{{Path: "/pause", Mode: 0o755, Data: bin}},
		imagetar.Config{Entrypoint: []string{"/pause"}})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func buildPause() ([]byte, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, fmt.Errorf("build skiff-pause: %w", err)
	}
	dir, err := os.MkdirTemp("", "skiff-pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "skiff-pause")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/skiff-pause")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build skiff-pause: %w: %s", err, msg)
	}
	return os.ReadFile(out)
}

// moduleRoot walks up from the working directory to the directory whose
// go.mod declares skiff's module (skipping nested modules such as test/kubectl).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if declaresSkiff(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

func declaresSkiff(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}
