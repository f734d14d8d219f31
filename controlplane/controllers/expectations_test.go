package controllers

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	const key = "ns/web"
	tests := []struct {
		name  string
		steps func(e *Expectations, clock *time.Time)
		want  bool
	}{
		{name: "never expected", steps: func(*Expectations, *time.Time) {}, want: true},
		{
			name: "creates outstanding",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectCreations(key, 3)
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			want: false,
		},
		{
			name: "creates all observed",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectCreations(key, 2)
				e.CreationObserved(key)
				e.CreationObserved(key)
			},
			want: true,
		},
		{
			name: "failed creates lowered",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectCreations(key, 8)
				e.CreationObserved(key)
				e.LowerCreations(key, 7)
			},
			want: true,
		},
		{
			name:  "other key observed",
			steps: func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1); e.CreationObserved("ns/other") },
			want:  false,
		},
		{
			name: "deletes outstanding",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectDeletions(key, []string{"ns/a", "ns/b"})
				e.DeletionObserved(key, "ns/a")
			},
			want: false,
		},
		{
			name: "same pod seen twice counts once",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectDeletions(key, []string{"ns/a", "ns/b"})
				e.DeletionObserved(key, "ns/a")
				e.DeletionObserved(key, "ns/a")
			},
			want: false,
		},
		{
			name: "unexpected pod deletions ignored",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectDeletions(key, []string{"ns/a"})
				e.DeletionObserved(key, "ns/z")
			},
			want: false,
		},
		{
			name: "deletes all observed",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectDeletions(key, []string{"ns/a", "ns/b"})
				e.DeletionObserved(key, "ns/b")
				e.DeletionObserved(key, "ns/a")
			},
			want: true,
		},
		{
			name: "new expectations replace old",
			steps: func(e *Expectations, _ *time.Time) {
				e.ExpectDeletions(key, []string{"ns/a"})
				e.ExpectCreations(key, 0)
			},
			want: true,
		},
		{
			name: "not yet expired",
			steps: func(e *Expectations, clock *time.Time) {
				e.ExpectCreations(key, 1)
				*clock = clock.Add(expectationsTimeout)
			},
			want: false,
		},
		{
			name: "expired",
			steps: func(e *Expectations, clock *time.Time) {
				e.ExpectCreations(key, 1)
				*clock = clock.Add(expectationsTimeout + time.Second)
			},
			want: true,
		},
		{
			name:  "forgotten",
			steps: func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1); e.Forget(key) },
			want:  true,
		},
		{
			name:  "observed before expected",
			steps: func(e *Expectations, _ *time.Time) { e.CreationObserved(key); e.ExpectCreations(key, 1) },
			want:  false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
			e := NewExpectations(func() time.Time { return clock })
			tt.steps(e, &clock)
			if got := e.Satisfied(key); got != tt.want {
				t.Errorf("satisfied = %v, want %v", got, tt.want)
			}
		})
	}
}
