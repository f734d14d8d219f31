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
	// AttrForwarded, on an OTLP export's resource, marks spans a server
	// forwards to the others (Peers): a server keeps them and does not
	// send them on.
	AttrForwarded = "skiff.forwarded"
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
	// fromPeer: another server took the step and forwarded it (Peers).
	fromPeer bool
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

// StepNames are the names of the journey's steps, in order.
func (j Journey) StepNames() []string {
	names := make([]string, 0, len(j.Steps))
	for _, s := range j.Steps {
		names = append(names, s.Name)
	}
	return names
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

// Merge adds the steps of j, the journey another server keeps of a pod,
// to the store's (each step once): how a server that starts learns the
// journeys the others kept. A new journey takes its place by when it
// began, so that it is dropped as old as it is; one older than every
// journey of a full store is left out. Subscribers are not told: the
// steps are not new.
func (s *Store) Merge(j Journey) {
	if len(j.Steps) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byUID[j.UID]
	if !ok {
		if e = s.insertByStart(j); e == nil {
			return
		}
		s.byUID[j.UID] = e
	}
	have := e.Value.(*Journey)
	for _, st := range j.Steps {
		st.fromPeer = true
		have.add(st)
	}
}

// insertByStart puts an empty journey of j's pod after the journeys that
// began before it, dropping the oldest if the store is full; nil if j is
// older than them all and there is no room. s.mu is held.
func (s *Store) insertByStart(j Journey) *list.Element {
	began := j.Steps[0].Start
	at := s.order.Back()
	for at != nil && at.Value.(*Journey).began().After(began) {
		at = at.Prev()
	}
	full := s.order.Len() >= s.capacity
	if full && at == nil {
		return nil
	}
	empty := &Journey{UID: j.UID, Namespace: j.Namespace, Name: j.Name, TraceID: j.TraceID}
	var e *list.Element
	if at == nil {
		e = s.order.PushFront(empty)
	} else {
		e = s.order.InsertAfter(empty, at)
	}
	if full {
		oldest := s.order.Front()
		delete(s.byUID, oldest.Value.(*Journey).UID)
		s.order.Remove(oldest)
	}
	return e
}

// began is when the journey's first step began (zero if it has none).
func (j *Journey) began() time.Time {
	if len(j.Steps) == 0 {
		return time.Time{}
	}
	return j.Steps[0].Start
}

// Capacity is how many journeys the store holds at most.
func (s *Store) Capacity() int { return s.capacity }

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
	if j.has(i, step) {
		return
	}
	j.Steps = slices.Insert(j.Steps, i, step)
}

// has reports whether the steps that began when step did, before index i,
// hold step already: a report sent again (an export retried after its
// answer was lost) adds nothing.
func (j *Journey) has(i int, step Step) bool {
	for _, s := range slices.Backward(j.Steps[:i]) {
		if !s.Start.Equal(step.Start) {
			return false
		}
		if s.Name == step.Name && s.Node == step.Node && s.End.Equal(step.End) {
			return true
		}
	}
	return false
}

func (j *Journey) copy() Journey {
	c := *j
	c.Steps = slices.Clone(j.Steps)
	return c
}
