package controllers

import (
	"sync"
	"time"
)

// expectationsTimeout is how long an owner (a ReplicaSet, a Job) waits
// for the informer to report its creates and deletes before it is synced
// anyway, in case an event was lost.
const expectationsTimeout = 5 * time.Minute

// Expectations remembers, per owner key, the creates and deletes of pods
// a sync started and the informer has not reported yet. While some are
// outstanding the owner must not be acted on again: its cache does not
// show them, so it would create or delete a second time. Deletes are
// tracked by pod key so that a pod seen twice (deletionTimestamp set, then
// gone) counts once. Safe for concurrent use.
type Expectations struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*expectation
}

type expectation struct {
	creates int                 // creates not yet observed; may go below zero
	deletes map[string]struct{} // pod keys whose deletion is not yet observed
	set     time.Time
}

func NewExpectations(now func() time.Time) *Expectations {
	return &Expectations{now: now, m: map[string]*expectation{}}
}

// ExpectCreations replaces key's expectations with n creates.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.Expect(key, n, nil)
}

// ExpectDeletions replaces key's expectations with the deletion of pods
// (pod keys).
func (e *Expectations) ExpectDeletions(key string, pods []string) {
	e.Expect(key, 0, pods)
}

// Expect replaces key's expectations with n creates and the deletion of
// pods (pod keys).
func (e *Expectations) Expect(key string, n int, pods []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp := &expectation{creates: n, deletes: make(map[string]struct{}, len(pods)), set: e.now()}
	for _, p := range pods {
		exp.deletes[p] = struct{}{}
	}
	e.m[key] = exp
}

// CreationObserved counts one create of key's as seen.
func (e *Expectations) CreationObserved(key string) {
	e.LowerCreations(key, 1)
}

// LowerCreations stops waiting for n of key's creates: seen, or never to
// happen because they failed or were skipped.
func (e *Expectations) LowerCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		exp.creates -= n
	}
}

// DeletionObserved stops waiting for the deletion of pod (a pod key), seen
// or failed. Pods key did not delete are ignored.
func (e *Expectations) DeletionObserved(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.m[key]; ok {
		delete(exp.deletes, pod)
	}
}

// Satisfied reports whether key may be acted on: nothing is outstanding,
// nothing was ever expected, or the expectations are older than
// expectationsTimeout.
func (e *Expectations) Satisfied(key string) bool {
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

// Forget drops key's expectations (its owner is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
