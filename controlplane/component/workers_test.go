package component

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
