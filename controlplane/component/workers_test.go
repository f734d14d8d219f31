package component

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
)

func TestRunWorkersRetriesUntilSynced(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"failure", errors.New("boom")},
		{"waiting", fmt.Errorf("2 objects remain: %w", ErrWaiting)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
			var mu sync.Mutex
			calls := 0
			done := make(chan struct{})
			syncKey := func(_ context.Context, key string) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls < 3 {
					return tt.err
				}
				close(done)
				return nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() {
				RunWorkers(ctx, "test", q, 2, syncKey)
				close(stopped)
			}()
			q.Add("ns/a")
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("key not synced after failures")
			}
			cancel()
			select {
			case <-stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("RunWorkers did not return after ctx ended")
			}
			if !q.ShuttingDown() {
				t.Error("queue not shut down")
			}
			if n := q.NumRequeues("ns/a"); n != 0 {
				t.Errorf("backoff not forgotten after success: %d requeues", n)
			}
		})
	}
}

// A key whose namespace is being deleted is dropped, not retried.
func TestRunWorkersDropsNamespaceTerminating(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var calls atomic.Int32
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go RunWorkers(ctx, "test", q, 1, func(context.Context, string) error { calls.Add(1); return terminating })
	q.Add("ns/a")
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("synced %d times, want once", n)
	}
	if n := q.NumRequeues("ns/a"); n != 0 {
		t.Errorf("%d requeues, want none", n)
	}
}
