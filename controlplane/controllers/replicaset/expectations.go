package replicaset

import (
	"sync"
	"time"
)

// expectationsTimeout is how long a ReplicaSet waits for the informer to
// report its creates and deletes before it is synced anyway, in case an
// event was lost.
const expectationsTimeout = 5 * time.Minute

// expectations remembers, per ReplicaSet key, the creates and deletes a
// sync started and the informer has not reported yet. While some are
// outstanding the ReplicaSet must not be acted on again: its cache does not
// show them, so it would create or delete a second time. Deletes are
// tracked by pod key so that a pod seen twice (deletionTimestamp set, then
// gone) counts once. Safe for concurrent use.
type expectations struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*expectation
}

type expectation struct {
	creates int                 // creates not yet observed; may go below zero
	deletes map[string]struct{} // pod keys whose deletion is not yet observed
	set     time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expectation{}}
}

// expectCreations replaces key's expectations with n creates.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{creates: n, set: e.now()}
}

// expectDeletions replaces key's expectations with the deletion of pods
// (pod keys).
func (e *expectations) expectDeletions(key string, pods []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp := &expectation{deletes: make(map[string]struct{}, len(pods)), set: e.now()}
	for _, p := range pods {
		exp.deletes[p] = struct{}{}
	}
	e.m[key] = exp
}

// creationObserved counts one create of key's as seen.
func (e *expectations) creationObserved(key string) {
	e.lowerCreations(key, 1)
}

// lowerCreations stops waiting for n of key's creates: seen, or never to
// happen because they failed or were skipped.
func (e *expectations) lowerCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		exp.creates -= n
	}
}

// deletionObserved stops waiting for the deletion of pod (a pod key), seen
// or failed. Pods key did not delete are ignored.
func (e *expectations) deletionObserved(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		delete(exp.deletes, pod)
	}
}

// satisfied reports whether key may be acted on: nothing is outstanding,
// nothing was ever expected, or the expectations are older than
// expectationsTimeout.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.m[key]
	if !ok {
		return true
	}
	if exp.creates <= 0 && len(exp.deletes) == 0 {
		return true
	}
	return e.now().Sub(exp.set) > expectationsTimeout
}

// forget drops key's expectations (its ReplicaSet is gone).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
