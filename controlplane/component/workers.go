package component

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
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
// syncs has its backoff forgotten. A failure that keeps recurring (the
// same error text) is logged once per back-off step, with its count.
func RunWorkers(ctx context.Context, controller string, q workqueue.TypedRateLimitingInterface[string], n int, syncKey SyncFunc) {
	slog.Debug("controller starting", "controller", controller, "workers", n)
	w := &workers{controller: controller, q: q, sync: syncKey,
		repeats: NewRepeats(failureLogBase, failureLogMax, clock.RealClock{})}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
	slog.Debug("controller stopped", "controller", controller)
}

// Failed syncs with the same error are logged after 1 s, 2 s, 4 s … and
// then every 5 minutes while they go on.
const (
	failureLogBase = time.Second
	failureLogMax  = 5 * time.Minute
)

// workers are one controller's workers on one queue.
type workers struct {
	controller string
	q          workqueue.TypedRateLimitingInterface[string]
	sync       SyncFunc
	repeats    *Repeats
}

func (w *workers) processNext(ctx context.Context) bool {
	key, quit := w.q.Get()
	if quit {
		return false
	}
	defer w.q.Done(key)
	err := w.sync(ctx, key)
	if err == nil {
		w.q.Forget(key)
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// The namespace is going, and what was to be made in it with it:
		// nothing to retry (as upstream's controllers drop such errors).
		w.q.Forget(key)
		return true
	}
	w.logFailure(ctx, key, err)
	w.q.AddRateLimited(key)
	return true
}

func (w *workers) logFailure(ctx context.Context, key string, err error) {
	level := slog.LevelWarn
	if errors.Is(err, ErrWaiting) {
		level = slog.LevelDebug
	}
	if !slog.Default().Enabled(ctx, level) {
		return
	}
	ok, repeated := w.repeats.Allow(err.Error())
	if !ok {
		return
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	args := []any{"controller", w.controller, "namespace", ns, "name", name, "retries", w.q.NumRequeues(key), "err", err}
	if repeated > 0 {
		args = append(args, "repeated", repeated)
	}
	slog.Log(ctx, level, "sync failed, retrying", args...)
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

// Enqueuer returns an event handler function that adds the key of the
// object it is given to q.
func Enqueuer(q workqueue.TypedRateLimitingInterface[string]) func(obj any) {
	return func(obj any) {
		if key, ok := KeyOf(obj); ok {
			q.Add(key)
		}
	}
}
