package apiserver

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// namespaceCache follows the namespaces in the store (list, then watch)
// so that creates can check their namespace without a read from etcd. A
// namespace it does not know is looked up in the store: it may be newer
// than the cache. It is safe for concurrent use.
type namespaceCache struct {
	mu     sync.RWMutex
	synced bool
	states map[string]nsState // every namespace
}

type nsState struct {
	terminating bool  // deletion has begun
	deleted     bool  // gone; kept so that an older event cannot revive it
	rev         int64 // the revision this state is from
}

// lookup reports whether the cache knows name and, if so, whether the
// namespace is terminating.
func (c *namespaceCache) lookup(name string) (known, terminating bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st, ok := c.states[name]
	return ok && !st.deleted && c.synced, st.terminating
}

// observe records a namespace's state as of a write or watch event; older
// news than what the cache has is ignored. This server's own writes are
// observed at once, so it never admits content into a namespace it has
// just marked for deletion.
func (c *namespaceCache) observe(obj runtime.Object, deleted bool) {
	m := registry.ObjectMeta(obj)
	rev, err := strconv.ParseInt(m.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.states == nil {
		c.states = map[string]nsState{}
	}
	if cur, ok := c.states[m.Name]; ok && cur.rev >= rev {
		return
	}
	c.states[m.Name] = nsState{terminating: m.DeletionTimestamp != nil, deleted: deleted, rev: rev}
}

// written tells the server's caches about an object it has just written
// (deleted: removed).
func (s *Server) written(res *registry.Resource, obj runtime.Object, deleted bool) {
	if res == s.namespaces {
		s.nsCache.observe(obj, deleted)
	}
}

// run keeps the cache current until ctx ends, listing again after a watch
// ends for any reason.
func (c *namespaceCache) run(ctx context.Context, st *store.Store, res *registry.Resource) {
	for ctx.Err() == nil {
		if err := c.follow(ctx, st, res); err != nil && ctx.Err() == nil {
			slog.Warn("namespace cache: relisting", "err", err)
		}
		c.mu.Lock()
		c.synced = false
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *namespaceCache) follow(ctx context.Context, st *store.Store, res *registry.Resource) error {
	page, err := st.List(ctx, res.Prefix(""), store.ListOptions{}, res.NewObj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.states = map[string]nsState{}
	c.mu.Unlock()
	for _, ns := range page.Items {
		c.observe(ns, false)
	}
	c.mu.Lock()
	c.synced = true
	c.mu.Unlock()
	for ev := range st.Watch(ctx, res.Prefix(""), page.Revision, res.NewObj) {
		if ev.Type == watch.Error {
			return ev.Err
		}
		if ev.Object == nil {
			continue
		}
		c.observe(ev.Object, ev.Type == watch.Deleted)
	}
	return ctx.Err()
}
