// Package podtrace keeps the journey of each pod through the cluster: the
// spans of the pod creation flow (API server, scheduler, agent, endpoints,
// proxies) that the components emit through OpenTelemetry, joined by the
// pod's UID and kept, compact, for the last pods created.
package podtrace

import (
	"container/list"
	"slices"
	"sort"
	"sync"
	"time"
)

// Attribute keys every span of a pod's journey carries (OpenTelemetry's
// semantic conventions where they have one).
const (
	AttrPodUID    = "k8s.pod.uid"
	AttrPodName   = "k8s.pod.name"
	AttrNamespace = "k8s.namespace.name"
	AttrNode      = "k8s.node.name"
	AttrComponent = "skiff.component"
	// AttrWhyNot prefixes, in a failed scheduling step, the attribute of
	// each node holding why it was not chosen.
	AttrWhyNot = "why-not."
	// AttrJoin marks a step recorded without its pod's trace context (a
	// node's proxy knows a pod from an EndpointSlice, not its
	// annotation): it joins the journey of its pod's UID, if the server
	// keeps one, and is dropped otherwise.
	AttrJoin = "skiff.join"
)

// Step is one span of a journey, compact: what happened, where, when, and
// its few results.
type Step struct {
	Name      string            `json:"name"`
	Component string            `json:"component"`
	Node      string            `json:"node,omitempty"`
	Start     time.Time         `json:"start"`
	End       time.Time         `json:"end"`
	Attrs     map[string]string `json:"attributes,omitempty"`
	Error     string            `json:"error,omitempty"`
}

// Duration is how long the step took.
func (s Step) Duration() time.Duration { return s.End.Sub(s.Start) }

// Journey is one pod's steps, in the order they began.
type Journey struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	TraceID   string `json:"traceID,omitempty"`
	Steps     []Step `json:"steps"`
}

// Store holds the journeys of the last Capacity pods seen, and tells
// subscribers of each step added. It is safe for concurrent use.
type Store struct {
	capacity int
	mu       sync.Mutex
	byUID    map[string]*list.Element // of *Journey
	order    *list.List               // oldest first
	subs     map[int]func(Journey, Step)
	nextSub  int
}

// NewStore returns a store of at most capacity pods' journeys.
func NewStore(capacity int) *Store {
	return &Store{capacity: max(capacity, 1), byUID: map[string]*list.Element{}, order: list.New(), subs: map[int]func(Journey, Step){}}
}

// Add records a step of the pod (uid, namespace, name) in the trace
// traceID. The pod's journey is made if it is new, dropping the oldest
// journey when the store is full.
func (s *Store) Add(uid, namespace, name, traceID string, step Step) {
	s.mu.Lock()
	j := s.journey(uid, namespace, name)
	if j.TraceID == "" {
		j.TraceID = traceID
	}
	j.add(step)
	s.notify(j, step)
}

// notify unlocks s.mu, then tells the subscribers of step, added to j.
func (s *Store) notify(j *Journey, step Step) {
	subs := s.subscribers()
	var snapshot Journey
	if len(subs) > 0 {
		snapshot = j.copy()
	}
	s.mu.Unlock()
	for _, fn := range subs {
		fn(snapshot, step)
	}
}

// journey is the pod's journey, made (and the oldest dropped) if new;
// s.mu is held.
func (s *Store) journey(uid, namespace, name string) *Journey {
	if e, ok := s.byUID[uid]; ok {
		j := e.Value.(*Journey)
		if j.Name == "" {
			j.Namespace, j.Name = namespace, name
		}
		return j
	}
	for s.order.Len() >= s.capacity {
		oldest := s.order.Front()
		delete(s.byUID, oldest.Value.(*Journey).UID)
		s.order.Remove(oldest)
	}
	j := &Journey{UID: uid, Namespace: namespace, Name: name}
	s.byUID[uid] = s.order.PushBack(j)
	return j
}

// Join adds step to the journey of pod uid if the store has one; it
// reports whether it did.
func (s *Store) Join(uid string, step Step) bool {
	s.mu.Lock()
	e, ok := s.byUID[uid]
	if !ok {
		s.mu.Unlock()
		return false
	}
	j := e.Value.(*Journey)
	j.add(step)
	s.notify(j, step)
	return true
}

// Get returns a copy of the pod's journey.
func (s *Store) Get(uid string) (Journey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byUID[uid]
	if !ok {
		return Journey{}, false
	}
	return e.Value.(*Journey).copy(), true
}

// Find returns a copy of the newest journey of a pod called name in
// namespace (one deleted, say, whose UID the caller no longer knows).
func (s *Store) Find(namespace, name string) (Journey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.order.Back(); e != nil; e = e.Prev() {
		if j := e.Value.(*Journey); j.Namespace == namespace && j.Name == name {
			return j.copy(), true
		}
	}
	return Journey{}, false
}

// Recent returns copies of the newest n journeys, newest first.
func (s *Store) Recent(n int) []Journey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Journey, 0, min(n, s.order.Len()))
	for e := s.order.Back(); e != nil && len(out) < n; e = e.Prev() {
		out = append(out, e.Value.(*Journey).copy())
	}
	return out
}

// Len is how many journeys the store holds.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

// Subscribe calls fn, outside the store's lock, with the journey and the
// step each time a step is added, until the returned cancel is called.
func (s *Store) Subscribe(fn func(Journey, Step)) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	s.subs[id] = fn
	return func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}
}

func (s *Store) subscribers() []func(Journey, Step) {
	out := make([]func(Journey, Step), 0, len(s.subs))
	for _, fn := range s.subs {
		out = append(out, fn)
	}
	return out
}

// maxSteps bounds a journey: steps past it are dropped.
const maxSteps = 256

// add puts step in its place by start time. A failed step replaces the
// last failure of the same step (a pod that stays unschedulable is tried
// again and again: its journey keeps the latest verdict).
func (j *Journey) add(step Step) {
	if step.Error != "" {
		for i, s := range slices.Backward(j.Steps) {
			if s.Name == step.Name {
				if s.Error != "" {
					j.Steps = slices.Delete(j.Steps, i, i+1)
				}
				break
			}
		}
	}
	if len(j.Steps) >= maxSteps {
		return
	}
	// After the steps that began at the same time: they came first.
	i := sort.Search(len(j.Steps), func(i int) bool { return j.Steps[i].Start.After(step.Start) })
	j.Steps = slices.Insert(j.Steps, i, step)
}

func (j *Journey) copy() Journey {
	c := *j
	c.Steps = slices.Clone(j.Steps)
	return c
}
