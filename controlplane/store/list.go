package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// ListOptions select a page of a list.
type ListOptions struct {
	// Revision reads the list as of that etcd revision; 0 reads the latest.
	Revision int64
	// Limit caps the number of items returned; 0 returns all.
	Limit int64
	// Continue is the token of a previous page.
	Continue string
	// Match keeps only the objects it accepts; nil keeps all.
	Match func(runtime.Object) bool
}

// ListResult is one page of a list.
type ListResult struct {
	Items []runtime.Object
	// Revision is the etcd revision the list was read at.
	Revision int64
	// Continue is the token for the next page, empty on the last one.
	Continue string
	// Remaining counts the keys after this page when known (limit set).
	Remaining int64
}

// ErrBadContinue reports a continue token that does not belong to the list.
var ErrBadContinue = errors.New("invalid continue token")

type continueToken struct {
	Version  string `json:"v"`
	Revision int64  `json:"rv"`
	Start    string `json:"start"`
}

const tokenVersion = "meta.k8s.io/v1"

// inconsistentRevision in a continue token says "at the latest revision":
// the token a list gets when its own has expired, as kube-apiserver gives.
const inconsistentRevision = -1

// ExpiredContinueError is a list continued from a revision compacted
// away; Continue goes on from the same key at the latest revision (the
// result may mix revisions).
type ExpiredContinueError struct{ Continue string }

func (e *ExpiredContinueError) Error() string { return "continue token expired" }

func (e *ExpiredContinueError) Unwrap() error { return ErrExpired }

func encodeContinue(key, prefix string, rev int64) string {
	data, _ := json.Marshal(continueToken{Version: tokenVersion, Revision: rev, Start: strings.TrimPrefix(key, prefix)})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(token, prefix string) (key string, rev int64, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, ErrBadContinue
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil || t.Version != tokenVersion || (t.Revision <= 0 && t.Revision != inconsistentRevision) {
		return "", 0, ErrBadContinue
	}
	if t.Revision == inconsistentRevision {
		t.Revision = 0 // the latest revision
	}
	// As kube-apiserver, refuse a start that is not a clean path below the
	// prefix ("../secrets/"), but not names with dots ("system:a..b").
	if strings.HasPrefix(t.Start, "/") || path.Clean("/"+t.Start) != "/"+t.Start {
		return "", 0, ErrBadContinue
	}
	return prefix + t.Start, t.Revision, nil
}

// List reads the objects under prefix (which must end in "/"), decoding each
// with newItem. With a limit, it keeps reading until the page is full or the
// keys run out, so that filtered lists still return full pages.
func (s *Store) List(ctx context.Context, prefix string, opts ListOptions, newItem func() runtime.Object) (*ListResult, error) {
	start, rev := prefix, opts.Revision
	if opts.Continue != "" {
		var err error
		if start, rev, err = decodeContinue(opts.Continue, prefix); err != nil {
			return nil, err
		}
	}
	end := clientv3.GetPrefixRangeEnd(prefix)
	out := &ListResult{}
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if rev > 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		if opts.Limit > 0 {
			ops = append(ops, clientv3.WithLimit(opts.Limit))
		}
		resp, err := s.get(ctx, start, ops...)
		if err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				if opts.Continue != "" {
					return nil, &ExpiredContinueError{Continue: encodeContinue(start, prefix, inconsistentRevision)}
				}
				return nil, ErrExpired
			}
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		out.Revision = rev
		for i, kv := range resp.Kvs {
			item := newItem()
			if err := s.decode(ctx, kv, item); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			if opts.Match == nil || opts.Match(item) {
				out.Items = append(out.Items, item)
			}
			if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
				more := resp.More || i < len(resp.Kvs)-1
				if more {
					out.Continue = encodeContinue(string(kv.Key)+"\x00", prefix, rev)
					out.Remaining = resp.Count - int64(i) - 1
				}
				return out, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Count returns how many keys are under prefix.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	resp, err := s.get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", prefix, err)
	}
	return resp.Count, nil
}

// Revision returns etcd's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.get(ctx, "/registry/", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}
