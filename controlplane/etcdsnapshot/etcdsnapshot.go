// Package etcdsnapshot saves and restores snapshots of a server's etcd, as
// `etcdctl snapshot save` and `etcdutl snapshot restore` do, on demand
// (`skiff etcd snapshot`) and on a schedule with retention, as k3s's
// --etcd-snapshot-schedule and --etcd-snapshot-retention.
package etcdsnapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/skiff-lab/skiff/controlplane/cronschedule"
)

// Save writes a snapshot of the etcd c reaches to path, whole or not at
// all (a temporary file synced, then renamed).
func Save(ctx context.Context, c *clientv3.Client, path string) (size int64, err error) {
	rc, err := c.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("etcd snapshot: %w", err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".part*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	size, err = io.Copy(tmp, rc)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("etcd snapshot to %s: %w", path, err)
	}
	return size, os.Rename(tmp.Name(), path)
}

// Member is the one member a restored etcd starts as.
type Member struct {
	Name    string
	PeerURL string
}

// revisionBump is how far a restore moves etcd's revision past the
// snapshot's (and marks what is before compacted), so that clients
// watching from a revision they saw before never see it go back: etcd's
// advice for restoring a Kubernetes cluster.
const revisionBump = 1_000_000_000

// Restore writes the snapshot at path as the data of a new one-member
// etcd in dataDir, which must not exist yet.
func Restore(path, dataDir string, m Member) error {
	if _, err := os.Stat(dataDir); err == nil {
		return fmt.Errorf("%s exists: stop the server and move it away first", dataDir)
	}
	err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                m.Name,
		OutputDataDir:       dataDir,
		PeerURLs:            []string{m.PeerURL},
		InitialCluster:      m.Name + "=" + m.PeerURL,
		InitialClusterToken: "etcd-cluster",
		RevisionBump:        revisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return nil
}

// Schedule is when scheduled snapshots are taken and how many are kept.
type Schedule struct {
	Cron      string // cron's five fields, or a descriptor (@every 6h)
	Retention int    // the newest kept; at least 1
	Dir       string // where they go
	Node      string // in their names
}

// scheduledPrefix starts the names of scheduled snapshots, which
// retention prunes (on-demand ones are left alone), as k3s names them.
const scheduledPrefix = "etcd-snapshot-"

// Run takes snapshots of the etcd c reaches on s's schedule until ctx
// ends, keeping the newest s.Retention.
func Run(ctx context.Context, c *clientv3.Client, s Schedule) error {
	sched, err := cronschedule.Parse(s.Cron)
	if err != nil {
		return fmt.Errorf("--etcd-snapshot-schedule: %w", err)
	}
	if s.Retention < 1 {
		return errors.New("--etcd-snapshot-retention: want at least 1")
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	go func() {
		for {
			next := sched.Next(time.Now())
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
			if err := takeScheduled(ctx, c, s, next); err != nil && ctx.Err() == nil {
				slog.Error("scheduled etcd snapshot failed", "err", err)
			}
		}
	}()
	return nil
}

func takeScheduled(ctx context.Context, c *clientv3.Client, s Schedule, at time.Time) error {
	path := filepath.Join(s.Dir, scheduledPrefix+s.Node+"-"+strconv.FormatInt(at.Unix(), 10))
	size, err := Save(ctx, c, path)
	if err != nil {
		return err
	}
	slog.Info("etcd snapshot saved", "path", path, "bytes", size)
	return prune(s)
}

// prune removes all but the newest s.Retention scheduled snapshots.
func prune(s Schedule) error {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), scheduledPrefix) && !strings.Contains(e.Name(), ".part") {
			names = append(names, e.Name())
		}
	}
	// The names end in the time they were taken: newest last.
	slices.SortFunc(names, compareTaken)
	for len(names) > s.Retention {
		if err := os.Remove(filepath.Join(s.Dir, names[0])); err != nil {
			return err
		}
		names = names[1:]
	}
	return nil
}

// compareTaken orders snapshot names by the Unix time that ends them.
func compareTaken(a, b string) int {
	ta, _ := strconv.ParseInt(a[strings.LastIndex(a, "-")+1:], 10, 64)
	tb, _ := strconv.ParseInt(b[strings.LastIndex(b, "-")+1:], 10, 64)
	return cmp.Compare(ta, tb)
}
