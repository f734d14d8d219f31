package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/cri"
)

// Scanning the images directory: every imageScanPeriod, a tarball that
// has not changed for imageSettle is imported.
const (
	imageScanPeriod = 10 * time.Second
	imageSettle     = 2 * time.Second
)

// imageDir imports the image tarballs put in the agent's images directory
// (air-gapped nodes): those there at start, then each new or changed one
// once it is no longer being written. Each version of a file is imported,
// or reported as refused, once.
type imageDir struct {
	dir string
	rt  interface {
		ImportFile(ctx context.Context, path string) ([]string, error)
	}
	clock clock.WithTicker
	seen  map[string]fileStamp // by file name: the version last imported or refused
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// scan imports the tarballs that are new or changed and have not changed
// for settle.
func (d *imageDir) scan(ctx context.Context, settle time.Duration) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		if !os.IsNotExist(err) {
			slog.Warn("read the images directory", "dir", d.dir, "err", err)
		}
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.IsDir() || !cri.ImageArchive(e.Name()) {
			continue
		}
		stamp := fileStamp{info.Size(), info.ModTime()}
		if d.seen[e.Name()] == stamp || d.clock.Since(stamp.mod) < settle {
			continue
		}
		d.seen[e.Name()] = stamp
		path := filepath.Join(d.dir, e.Name())
		if names, err := d.rt.ImportFile(ctx, path); err != nil {
			slog.Warn("image tarball not imported", "file", path, "err", err)
		} else {
			slog.Info("imported images", "file", path, "images", names)
		}
	}
}

// watch scans every imageScanPeriod until ctx ends.
func (d *imageDir) watch(ctx context.Context) {
	t := d.clock.NewTicker(imageScanPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			d.scan(ctx, imageSettle)
		}
	}
}
