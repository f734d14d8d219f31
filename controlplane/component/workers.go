package component

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// ErrWaiting marks a sync that did what it could and must look again
// later (content still draining, say). RunWorkers retries it with the
// queue's rate limiter like any error, but logs it at debug level only.
var ErrWaiting = errors.New("waiting")

// SyncFunc brings the object named by key (namespace/name, or name for
// cluster-scoped objects) to its desired state.
type SyncFunc func(ctx context.Context, key string) error

// RunWorkers runs n workers that take keys from q and hand them to syncKey,
// until ctx ends; then it shuts q down and waits for the workers. The queue
// guarantees that one key is never synced by two workers at once. A key
// whose sync fails is added again through q's rate limiter; a key that
// syncs has its backoff forgotten.
func RunWorkers(ctx context.Context, controller string, q workqueue.TypedRateLimitingInterface[string], n int, syncKey SyncFunc) {
	slog.Info("controller starting", "controller", controller, "workers", n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, controller, q, syncKey) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
	slog.Info("controller stopped", "controller", controller)
}

func processNext(ctx context.Context, controller string, q workqueue.TypedRateLimitingInterface[string], syncKey SyncFunc) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := syncKey(ctx, key)
	if err == nil {
		q.Forget(key)
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	level := slog.LevelWarn
	if errors.Is(err, ErrWaiting) {
		level = slog.LevelDebug
	}
	slog.Log(ctx, level, "sync failed, retrying", "controller", controller, "namespace", ns, "name", name,
		"retries", q.NumRequeues(key), "err", err)
	q.AddRateLimited(key)
	return true
}

// KeyOf returns the queue key of an informer object, also for the
// tombstones that delete handlers may be given.
func KeyOf(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		slog.Warn("no key for object", "err", err)
		return "", false
	}
	return key, true
}
