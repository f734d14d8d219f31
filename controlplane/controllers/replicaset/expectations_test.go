package replicaset

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	const key = "ns/web"
	tests := []struct {
		name  string
		steps func(e *expectations, clock *time.Time)
		want  bool
	}{
		{name: "never expected", steps: func(*expectations, *time.Time) {}, want: true},
		{
			name: "creates outstanding",
			steps: func(e *expectations, _ *time.Time) {
				e.expectCreations(key, 3)
				e.creationObserved(key)
				e.creationObserved(key)
			},
			want: false,
		},
		{
			name: "creates all observed",
			steps: func(e *expectations, _ *time.Time) {
				e.expectCreations(key, 2)
				e.creationObserved(key)
				e.creationObserved(key)
			},
			want: true,
		},
		{
			name: "failed creates lowered",
			steps: func(e *expectations, _ *time.Time) {
				e.expectCreations(key, 8)
				e.creationObserved(key)
				e.lowerCreations(key, 7)
			},
			want: true,
		},
		{
			name:  "other key observed",
			steps: func(e *expectations, _ *time.Time) { e.expectCreations(key, 1); e.creationObserved("ns/other") },
			want:  false,
		},
		{
			name: "deletes outstanding",
			steps: func(e *expectations, _ *time.Time) {
				e.expectDeletions(key, []string{"ns/a", "ns/b"})
				e.deletionObserved(key, "ns/a")
			},
			want: false,
		},
		{
			name: "same pod seen twice counts once",
			steps: func(e *expectations, _ *time.Time) {
				e.expectDeletions(key, []string{"ns/a", "ns/b"})
				e.deletionObserved(key, "ns/a")
				e.deletionObserved(key, "ns/a")
			},
			want: false,
		},
		{
			name: "unexpected pod deletions ignored",
			steps: func(e *expectations, _ *time.Time) {
				e.expectDeletions(key, []string{"ns/a"})
				e.deletionObserved(key, "ns/z")
			},
			want: false,
		},
		{
			name: "deletes all observed",
			steps: func(e *expectations, _ *time.Time) {
				e.expectDeletions(key, []string{"ns/a", "ns/b"})
				e.deletionObserved(key, "ns/b")
				e.deletionObserved(key, "ns/a")
			},
			want: true,
		},
		{
			name: "new expectations replace old",
			steps: func(e *expectations, _ *time.Time) {
				e.expectDeletions(key, []string{"ns/a"})
				e.expectCreations(key, 0)
			},
			want: true,
		},
		{
			name: "not yet expired",
			steps: func(e *expectations, clock *time.Time) {
				e.expectCreations(key, 1)
				*clock = clock.Add(expectationsTimeout)
			},
			want: false,
		},
		{
			name: "expired",
			steps: func(e *expectations, clock *time.Time) {
				e.expectCreations(key, 1)
				*clock = clock.Add(expectationsTimeout + time.Second)
			},
			want: true,
		},
		{
			name:  "forgotten",
			steps: func(e *expectations, _ *time.Time) { e.expectCreations(key, 1); e.forget(key) },
			want:  true,
		},
		{
			name:  "observed before expected",
			steps: func(e *expectations, _ *time.Time) { e.creationObserved(key); e.expectCreations(key, 1) },
			want:  false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := t0
			e := newExpectations(func() time.Time { return clock })
			tt.steps(e, &clock)
			if got := e.satisfied(key); got != tt.want {
				t.Errorf("satisfied = %v, want %v", got, tt.want)
			}
		})
	}
}
