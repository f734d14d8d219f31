package component

import (
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// NewQueue is a controller's work queue of keys, with client-go's default
// controller rate limiter; name labels its metrics.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// FromTombstone returns the object a delete handler was given: obj itself,
// or the last state a tombstone holds. ok is false when obj is neither a T
// nor a tombstone of one.
func FromTombstone[T any](obj any) (t T, ok bool) {
	if t, ok = obj.(T); ok {
		return t, true
	}
	tombstone, isTombstone := obj.(cache.DeletedFinalStateUnknown)
	if !isTombstone {
		return t, false
	}
	t, ok = tombstone.Obj.(T)
	return t, ok
}
