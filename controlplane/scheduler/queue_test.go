package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// queuedPodNamed returns an unscheduled pod with priority (nil: none).
func queuedPodNamed(name string, priority *int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Priority: priority},
	}
}

func prio(p int32) *int32 { return &p }

func newTestQueue(t *testing.T) (*Queue, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	q := NewQueue(clk)
	t.Cleanup(q.Close) // releases a Pop a failed test left waiting
	return q, clk
}

type popped struct {
	pod      *corev1.Pod
	attempts int
	cycle    int64
	ok       bool
}

// popWithin runs Pop in a goroutine and fails the test if it has not
// returned within a second.
func popWithin(t *testing.T, ctx context.Context, q *Queue) popped {
	t.Helper()
	done := make(chan popped, 1)
	go func() {
		a, ok := q.Pop(ctx)
		done <- popped{a.pod, a.attempts, a.cycle, ok}
	}()
	select {
	case p := <-done:
		return p
	case <-time.After(time.Second):
		t.Fatal("Pop did not return within 1s")
		return popped{}
	}
}

// pop pops a pod the test expects to be active.
func pop(t *testing.T, q *Queue) popped {
	t.Helper()
	p := popWithin(t, context.Background(), q)
	if !p.ok {
		t.Fatal("Pop: ok = false, want a pod")
	}
	return p
}

type parts struct{ active, backoff, unschedulable int }

func lens(q *Queue) parts {
	a, b, u := q.Len()
	return parts{a, b, u}
}

func TestQueuePopOrder(t *testing.T) {
	type add struct {
		name     string
		priority *int32
	}
	tests := []struct {
		name string
		adds []add // one millisecond apart
		want []string
	}{
		{
			name: "same priority: first in, first out",
			adds: []add{{"a", nil}, {"b", nil}, {"c", nil}},
			want: []string{"a", "b", "c"},
		},
		{
			name: "higher priority first",
			adds: []add{{"low", prio(1)}, {"high", prio(1000)}, {"mid", prio(10)}},
			want: []string{"high", "mid", "low"},
		},
		{
			name: "priority, then first in",
			adds: []add{{"low-1", prio(0)}, {"high-1", prio(5)}, {"low-2", prio(0)}, {"high-2", prio(5)}},
			want: []string{"high-1", "high-2", "low-1", "low-2"},
		},
		{
			name: "no priority is priority 0, above negative ones",
			adds: []add{{"negative", prio(-10)}, {"none", nil}, {"zero", prio(0)}},
			want: []string{"none", "zero", "negative"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t)
			for _, a := range tt.adds {
				q.Add(queuedPodNamed(a.name, a.priority))
				clk.Step(time.Millisecond)
			}
			var got []string
			for range tt.adds {
				got = append(got, pop(t, q).pod.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("popped %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueueAddUpdatesAQueuedPod(t *testing.T) {
	q, clk := newTestQueue(t)
	q.Add(queuedPodNamed("a", prio(1)))
	clk.Step(time.Millisecond)
	q.Add(queuedPodNamed("b", prio(5)))
	clk.Step(time.Millisecond)
	q.Add(queuedPodNamed("a", prio(10))) // a's priority raised while queued

	if got, want := lens(q), (parts{active: 2}); got != want {
		t.Fatalf("Len = %+v, want %+v", got, want)
	}
	first := pop(t, q).pod
	if first.Name != "a" || *first.Spec.Priority != 10 {
		t.Errorf("first Pop = %s with priority %d, want the updated a with priority 10", first.Name, *first.Spec.Priority)
	}
}

func TestQueuePopCountsAttempts(t *testing.T) {
	q, clk := newTestQueue(t)
	q.Add(queuedPodNamed("a", nil))
	for want := 1; want <= 3; want++ {
		p := pop(t, q)
		if p.attempts != want {
			t.Fatalf("attempt %d: Pop returned attempts = %d", want, p.attempts)
		}
		q.Requeue(p.pod, p.attempts, p.cycle, false)
		clk.Step(maxBackoff)
		q.Flush()
	}
}

func TestQueueRequeue(t *testing.T) {
	tests := []struct {
		name          string
		unschedulable bool // else another failure (e.g. binding rejected)
		duringAttempt func(q *Queue)
		want          parts
	}{
		{
			name:          "unschedulable waits for a cluster event",
			unschedulable: true,
			want:          parts{unschedulable: 1},
		},
		{
			name:          "unschedulable with a cluster event during the attempt backs off",
			unschedulable: true,
			duringAttempt: func(q *Queue) { q.MoveAllToActive() },
			want:          parts{backoff: 1},
		},
		{
			name: "another failure backs off",
			want: parts{backoff: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t)
			q.Add(queuedPodNamed("a", nil))
			p := pop(t, q)
			if tt.duringAttempt != nil {
				tt.duringAttempt(q)
			}
			q.Requeue(p.pod, p.attempts, p.cycle, tt.unschedulable)
			if got := lens(q); got != tt.want {
				t.Errorf("Len = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestQueueMoveAllToActive(t *testing.T) {
	tests := []struct {
		name     string
		attempts int           // of the failed attempt
		wait     time.Duration // from Requeue to the cluster event
		want     parts
	}{
		{name: "backoff over: to active", attempts: 1, wait: time.Second, want: parts{active: 1}},
		{name: "backoff not over: to backoff", attempts: 1, wait: 999 * time.Millisecond, want: parts{backoff: 1}},
		{name: "longer backoff after more attempts", attempts: 3, wait: 3 * time.Second, want: parts{backoff: 1}},
		{name: "longer backoff over", attempts: 3, wait: 4 * time.Second, want: parts{active: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t)
			q.Add(queuedPodNamed("a", nil))
			p := pop(t, q)
			q.Requeue(p.pod, tt.attempts, p.cycle, true)
			clk.Step(tt.wait)
			q.MoveAllToActive()
			if got := lens(q); got != tt.want {
				t.Errorf("Len = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestQueueMoveAllToActiveThenFlush(t *testing.T) {
	q, clk := newTestQueue(t)
	q.Add(queuedPodNamed("a", nil))
	p := pop(t, q)
	q.Requeue(p.pod, 2, p.cycle, true) // 2 s backoff
	clk.Step(time.Second)
	q.MoveAllToActive()
	if got, want := lens(q), (parts{backoff: 1}); got != want {
		t.Fatalf("after the event: Len = %+v, want %+v", got, want)
	}
	clk.Step(time.Second) // 2 s since the failure
	q.Flush()
	if got, want := lens(q), (parts{active: 1}); got != want {
		t.Errorf("after the backoff: Len = %+v, want %+v", got, want)
	}
}

func TestBackoffFor(t *testing.T) {
	tests := []struct {
		attempts int
		want     time.Duration
	}{
		{0, time.Second},
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{4, 8 * time.Second},
		{5, 10 * time.Second},
		{6, 10 * time.Second},
		{1000, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := backoffFor(tt.attempts); got != tt.want {
			t.Errorf("backoffFor(%d) = %v, want %v", tt.attempts, got, tt.want)
		}
	}
}

func TestQueueFlush(t *testing.T) {
	tests := []struct {
		name          string
		unschedulable bool
		attempts      int
		wait          time.Duration // from Requeue to Flush
		want          parts
	}{
		{name: "1st attempt: 1s not yet", attempts: 1, wait: time.Second - time.Millisecond, want: parts{backoff: 1}},
		{name: "1st attempt: 1s", attempts: 1, wait: time.Second, want: parts{active: 1}},
		{name: "2nd attempt: 2s not yet", attempts: 2, wait: 2*time.Second - time.Millisecond, want: parts{backoff: 1}},
		{name: "2nd attempt: 2s", attempts: 2, wait: 2 * time.Second, want: parts{active: 1}},
		{name: "3rd attempt: 4s not yet", attempts: 3, wait: 4*time.Second - time.Millisecond, want: parts{backoff: 1}},
		{name: "3rd attempt: 4s", attempts: 3, wait: 4 * time.Second, want: parts{active: 1}},
		{name: "4th attempt: 8s not yet", attempts: 4, wait: 8*time.Second - time.Millisecond, want: parts{backoff: 1}},
		{name: "4th attempt: 8s", attempts: 4, wait: 8 * time.Second, want: parts{active: 1}},
		{name: "5th attempt: capped at 10s, not yet", attempts: 5, wait: 10*time.Second - time.Millisecond, want: parts{backoff: 1}},
		{name: "5th attempt: capped at 10s", attempts: 5, wait: 10 * time.Second, want: parts{active: 1}},
		{name: "20th attempt: still 10s", attempts: 20, wait: 10 * time.Second, want: parts{active: 1}},
		{
			name: "unschedulable for less than 5 minutes stays", unschedulable: true, attempts: 1,
			wait: 5*time.Minute - time.Second, want: parts{unschedulable: 1},
		},
		{
			name: "unschedulable for 5 minutes is tried again", unschedulable: true, attempts: 1,
			wait: 5 * time.Minute, want: parts{active: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newTestQueue(t)
			q.Add(queuedPodNamed("a", nil))
			p := pop(t, q)
			q.Requeue(p.pod, tt.attempts, p.cycle, tt.unschedulable)
			clk.Step(tt.wait)
			q.Flush()
			if got := lens(q); got != tt.want {
				t.Errorf("Len = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// queueWithPodIn returns a queue holding pod "a" in part ("active",
// "backoff" or "unschedulable"), after attempts failed attempts.
func queueWithPodIn(t *testing.T, part string, attempts int) (*Queue, *testingclock.FakeClock) {
	t.Helper()
	q, clk := newTestQueue(t)
	q.Add(queuedPodNamed("a", nil))
	if part == "active" {
		return q, clk
	}
	p := pop(t, q)
	q.Requeue(p.pod, attempts, p.cycle, part == "unschedulable")
	return q, clk
}

func TestQueueDelete(t *testing.T) {
	for _, part := range []string{"active", "backoff", "unschedulable"} {
		t.Run("from "+part, func(t *testing.T) {
			q, clk := queueWithPodIn(t, part, 1)
			q.Delete(queuedPodNamed("a", nil))
			if got := lens(q); got != (parts{}) {
				t.Errorf("Len = %+v, want empty", got)
			}
			clk.Step(maxUnschedulable)
			q.Flush()
			if got := lens(q); got != (parts{}) {
				t.Errorf("after Flush: Len = %+v, want empty", got)
			}
		})
	}
}

func TestQueueAddMovesAWaitingPodToActive(t *testing.T) {
	for _, part := range []string{"backoff", "unschedulable"} {
		t.Run("from "+part, func(t *testing.T) {
			q, _ := queueWithPodIn(t, part, 3)
			q.Add(queuedPodNamed("a", nil)) // changed: worth trying now
			if got, want := lens(q), (parts{active: 1}); got != want {
				t.Fatalf("Len = %+v, want %+v", got, want)
			}
			if p := pop(t, q); p.attempts != 4 {
				t.Errorf("Pop attempts = %d, want 4 (the count survives the move)", p.attempts)
			}
		})
	}
}

func TestQueueAddDuringAttempt(t *testing.T) {
	q, _ := newTestQueue(t)
	q.Add(queuedPodNamed("a", nil))
	pop(t, q)
	q.Add(queuedPodNamed("a", nil)) // updated while being scheduled
	if got := lens(q); got != (parts{}) {
		t.Errorf("Len = %+v, want the pod left to its attempt", got)
	}
}

func TestQueuePopStops(t *testing.T) {
	tests := []struct {
		name string
		stop func(q *Queue, cancel context.CancelFunc)
	}{
		{name: "Close", stop: func(q *Queue, _ context.CancelFunc) { q.Close() }},
		{name: "ctx cancelled", stop: func(_ *Queue, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" wakes a waiting Pop", func(t *testing.T) {
			q, _ := newTestQueue(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				time.Sleep(10 * time.Millisecond) // let Pop wait
				tt.stop(q, cancel)
			}()
			if p := popWithin(t, ctx, q); p.ok {
				t.Errorf("Pop = %s, ok; want ok = false", p.pod.Name)
			}
		})
	}
	t.Run("Pop after Close returns at once, even with pods queued", func(t *testing.T) {
		q, _ := newTestQueue(t)
		q.Add(queuedPodNamed("a", nil))
		q.Close()
		if p := popWithin(t, context.Background(), q); p.ok {
			t.Errorf("Pop = %s, ok; want ok = false", p.pod.Name)
		}
	})
}
