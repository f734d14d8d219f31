package store

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one change under a watched prefix.
type Event struct {
	Type watch.EventType
	// Object is the new state; for Deleted the last state, with the
	// resourceVersion of the delete. Nil for Bookmark and Error.
	Object runtime.Object
	// Prev is the state before the change, for watches WithPrevious; nil
	// for Added.
	Prev runtime.Object
	// Revision is the etcd revision of the change or bookmark.
	Revision int64
	// Err is set on Error events: ErrExpired when the start revision was
	// compacted away. The channel closes after an Error event.
	Err error
}

// WatchOption changes what a watch's events carry.
type WatchOption func(*watchOptions)

type watchOptions struct{ previous bool }

// WithPrevious gives every event the state before the change (Prev), for
// watchers that filter on it. Without it, only a delete's last state is
// decoded: the value etcd sends but the watcher would not read is not.
func WithPrevious() WatchOption { return func(o *watchOptions) { o.previous = true } }

// Watch streams the changes under prefix made after revision rev (0: from
// now). Progress notifications arrive as Bookmark events. The channel closes
// when ctx ends or after an Error event.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64, newItem func() runtime.Object, opts ...WatchOption) <-chan Event {
	var o watchOptions
	for _, opt := range opts {
		opt(&o)
	}
	out := make(chan Event, 100)
	etcdOpts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify()}
	if rev > 0 {
		etcdOpts = append(etcdOpts, clientv3.WithRev(rev+1))
	}
	ctx = clientv3.WithRequireLeader(ctx)
	wch := s.client.Watch(ctx, prefix, etcdOpts...)
	go func() {
		defer close(out)
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if resp.CompactRevision > 0 {
					err = ErrExpired
				}
				send(ctx, out, Event{Type: watch.Error, Err: err})
				return
			}
			if resp.IsProgressNotify() {
				if !send(ctx, out, Event{Type: watch.Bookmark, Revision: resp.Header.Revision}) {
					return
				}
				continue
			}
			for _, ev := range resp.Events {
				e, err := s.toEvent(ctx, ev, newItem, o.previous)
				if err != nil {
					e = Event{Type: watch.Error, Err: err}
				}
				if !send(ctx, out, e) || e.Err != nil {
					return
				}
			}
		}
	}()
	return out
}

func send(ctx context.Context, out chan<- Event, e Event) bool {
	select {
	case out <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Store) toEvent(ctx context.Context, ev *clientv3.Event, newItem func() runtime.Object, previous bool) (Event, error) {
	e := Event{Revision: ev.Kv.ModRevision}
	if ev.PrevKv != nil && (previous || ev.Type == clientv3.EventTypeDelete) {
		e.Prev = newItem()
		if err := s.decode(ctx, ev.PrevKv, e.Prev); err != nil {
			return e, fmt.Errorf("%s: %w", ev.Kv.Key, err)
		}
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if e.Prev == nil {
			return e, fmt.Errorf("%s: delete without previous value", ev.Kv.Key)
		}
		e.Type, e.Object = watch.Deleted, e.Prev
		if previous {
			e.Object = e.Prev.DeepCopyObject()
		} else {
			e.Prev = nil
		}
		return e, setVersion(e.Object, ev.Kv.ModRevision)
	case ev.IsCreate():
		e.Type, e.Prev = watch.Added, nil
	default:
		e.Type = watch.Modified
	}
	e.Object = newItem()
	return e, s.decode(ctx, ev.Kv, e.Object)
}
