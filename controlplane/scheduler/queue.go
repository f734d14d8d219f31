package scheduler

import (
	"container/heap"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/utils/clock"
)

// Backoff and flush timings, as kube-scheduler's defaults.
const (
	initialBackoff = time.Second
	maxBackoff     = 10 * time.Second
	// maxUnschedulable is how long a pod waits for a cluster event before
	// it is tried again anyway.
	maxUnschedulable = 5 * time.Minute
)

// queuedPod is a pod waiting to be scheduled.
type queuedPod struct {
	pod      *corev1.Pod
	attempts int
	added    time.Time // when it entered its current part of the queue
	index    int       // in the active heap
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// Queue holds the pods to schedule in three parts: active (ready now,
// highest priority first, then oldest), backoff (failed recently, waiting
// 1 s doubling to 10 s), and unschedulable (waiting for a cluster event:
// a node added or changed, a pod deleted). It is safe for concurrent use.
type Queue struct {
	mu            sync.Mutex
	cond          *sync.Cond
	clock         clock.Clock
	active        activeHeap
	backoff       map[string]*queuedPod
	unschedulable map[string]*queuedPod
	inFlight      map[string]bool // pods being scheduled; true if changed meanwhile
	// moved counts cluster events; a pod that fails while one happens goes
	// to backoff rather than unschedulable, so it does not miss the event.
	moved  int64
	closed bool
}

// NewQueue returns an empty queue on clock.
func NewQueue(clk clock.Clock) *Queue {
	q := &Queue{clock: clk, backoff: map[string]*queuedPod{}, unschedulable: map[string]*queuedPod{}, inFlight: map[string]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues a new or changed pod as active. A pod being scheduled right
// now is left to that attempt.
func (q *Queue) Add(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	if _, ok := q.inFlight[key]; ok {
		q.inFlight[key] = true // changed during its attempt: Requeue backs it off
		return
	}
	if i := q.active.find(key); i >= 0 {
		q.active.items[i].pod = pod
		heap.Fix(&q.active, i)
		return
	}
	attempts := 0
	for _, part := range []map[string]*queuedPod{q.backoff, q.unschedulable} {
		if qp, ok := part[key]; ok {
			attempts = qp.attempts
			delete(part, key)
		}
	}
	heap.Push(&q.active, &queuedPod{pod: pod, attempts: attempts, added: q.clock.Now()})
	q.cond.Signal()
}

// Delete forgets a pod (an attempt in flight is not requeued).
func (q *Queue) Delete(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	delete(q.inFlight, key)
	if i := q.active.find(key); i >= 0 {
		heap.Remove(&q.active, i)
	}
	delete(q.backoff, key)
	delete(q.unschedulable, key)
}

// Pop waits for an active pod and returns an attempt at it: its attempt
// count, the cluster-event count at the time (for Requeue) and when it
// became active. ok is false once the queue is closed or ctx ends.
func (q *Queue) Pop(ctx context.Context) (a attempt, ok bool) {
	stop := context.AfterFunc(ctx, q.Close)
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.active.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return attempt{}, false
	}
	qp := heap.Pop(&q.active).(*queuedPod)
	q.inFlight[podKey(qp.pod)] = false
	return attempt{pod: qp.pod, attempts: qp.attempts + 1, cycle: q.moved, queued: qp.added, start: q.clock.Now()}, true
}

// Done ends an attempt that bound the pod.
func (q *Queue) Done(pod *corev1.Pod) {
	q.mu.Lock()
	delete(q.inFlight, podKey(pod))
	q.mu.Unlock()
}

// Requeue puts back a pod whose attempt failed. An unschedulable pod waits
// for a cluster event, unless one happened since cycle (then it backs off);
// any other failure backs off.
func (q *Queue) Requeue(pod *corev1.Pod, attempts int, cycle int64, unschedulable bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	changed, ok := q.inFlight[key]
	delete(q.inFlight, key)
	if !ok || q.active.find(key) >= 0 || q.backoff[key] != nil {
		return // deleted while in flight, or already queued again
	}
	qp := &queuedPod{pod: pod, attempts: attempts, added: q.clock.Now()}
	if unschedulable && q.moved == cycle && !changed {
		q.unschedulable[key] = qp
		return
	}
	q.backoff[key] = qp
}

// MoveAllToActive reacts to a cluster event that may make unschedulable
// pods fit: each goes to active, or to backoff if its backoff has not
// expired yet.
func (q *Queue) MoveAllToActive() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moved++
	for key, qp := range q.unschedulable {
		delete(q.unschedulable, key)
		if q.clock.Now().Before(qp.added.Add(backoffFor(qp.attempts))) {
			q.backoff[key] = qp
			continue
		}
		qp.added = q.clock.Now()
		heap.Push(&q.active, qp)
	}
	q.cond.Broadcast()
}

// Flush moves pods whose backoff expired, and pods unschedulable for too
// long, to active. The scheduler calls it every second.
func (q *Queue) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for key, qp := range q.backoff {
		if !now.Before(qp.added.Add(backoffFor(qp.attempts))) {
			delete(q.backoff, key)
			heap.Push(&q.active, qp)
		}
	}
	for key, qp := range q.unschedulable {
		if now.Sub(qp.added) >= maxUnschedulable {
			delete(q.unschedulable, key)
			heap.Push(&q.active, qp)
		}
	}
	q.cond.Broadcast()
}

// Close wakes every waiting Pop.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// Len reports the pods in each part, for tests and metrics.
func (q *Queue) Len() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.active.items), len(q.backoff), len(q.unschedulable)
}

// backoffFor is 1 s doubling per attempt, at most 10 s.
func backoffFor(attempts int) time.Duration {
	d := initialBackoff
	for i := 1; i < attempts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// activeHeap orders pods by priority, then by time queued, and finds them
// by key.
type activeHeap struct {
	items []*queuedPod
	keys  map[string]*queuedPod
}

func (h activeHeap) Len() int { return len(h.items) }
func (h activeHeap) Less(i, j int) bool {
	pi, pj := v1helper.PodPriority(h.items[i].pod), v1helper.PodPriority(h.items[j].pod)
	if pi != pj {
		return pi > pj
	}
	return h.items[i].added.Before(h.items[j].added)
}
func (h activeHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *activeHeap) Push(x any) {
	qp := x.(*queuedPod)
	qp.index = len(h.items)
	h.items = append(h.items, qp)
	if h.keys == nil {
		h.keys = map[string]*queuedPod{}
	}
	h.keys[podKey(qp.pod)] = qp
}
func (h *activeHeap) Pop() any {
	n := len(h.items)
	qp := h.items[n-1]
	h.items = h.items[:n-1]
	delete(h.keys, podKey(qp.pod))
	return qp
}

// find returns the heap index of the pod with key, or -1.
func (h *activeHeap) find(key string) int {
	if qp, ok := h.keys[key]; ok {
		return qp.index
	}
	return -1
}
