// Package informer holds what skiff's informer users share, in the
// control plane and on nodes alike: the object a delete handler was
// given, whether client-go delivered it or a tombstone of it, and the
// registration of event handlers.
package informer

import "k8s.io/client-go/tools/cache"

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
