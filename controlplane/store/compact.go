package store

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactKey records the revision the last compaction started from, so
// that several API servers sharing one etcd compact once per interval.
const compactKey = "compact_rev_key"

// RunCompactor compacts etcd's history every interval, keeping at least one
// interval of it (watchers further behind get 410 Expired and relist). It
// returns when ctx ends.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var version, rev int64 // of compactKey, as last seen
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		var err error
		version, rev, err = s.compactOnce(ctx, version, rev)
		if err != nil && ctx.Err() == nil {
			slog.Error("compact etcd", "err", err)
		}
	}
}

// compactOnce claims this interval's compaction by bumping compactKey from
// the version seen last time, then compacts to the revision recorded then.
// A server that loses the race learns the new version and revision.
func (s *Store) compactOnce(ctx context.Context, version, rev int64) (int64, int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactKey), "=", version)).
		Then(clientv3.OpPut(compactKey, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(compactKey)).
		Commit()
	if err != nil {
		return version, rev, err
	}
	current := resp.Header.Revision
	if !resp.Succeeded {
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		return kv.Version, kv.ModRevision, nil
	}
	if rev > 0 {
		if _, err := s.client.Compact(ctx, rev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			return version + 1, current, err
		}
		slog.Debug("compacted etcd", "revision", rev)
	}
	return version + 1, current, nil
}
