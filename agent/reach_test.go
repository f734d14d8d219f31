package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testclock "k8s.io/utils/clock/testing"
)

func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("fetch the cluster CA: %w", refused), true},
		{fmt.Errorf("register: %w", apierrors.NewServiceUnavailable("etcd")), true},
		{fmt.Errorf("register: %w", apierrors.NewTooManyRequests("busy", 1)), true},
		{errors.New("the server's CA does not match the token's hash"), false},
		{fmt.Errorf("register: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("no"))), false},
		{fmt.Errorf("join: %w", apierrors.NewUnauthorized("bad token")), false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestUntilReachable: tries again after 1 s, then 2 s, while the server is
// unreachable; stops at once on a refusal, and when ctx ends.
func TestUntilReachable(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	tries := make(chan int, 10)
	n := 0
	done := make(chan error, 1)
	go func() {
		done <- untilReachable(context.Background(), clk, "test", func() error {
			n++
			tries <- n
			if n < 3 {
				return refused
			}
			return nil
		})
	}()
	<-tries
	for _, wait := range []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond} {
		// The next try waits for the back-off step (jitter only lengthens it).
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(wait)
		select {
		case got := <-tries:
			t.Fatalf("try %d before its back-off step passed", got)
		case <-time.After(50 * time.Millisecond):
		}
		clk.Step(wait)
		<-tries
	}
	if err := <-done; err != nil || n != 3 {
		t.Errorf("untilReachable = %v after %d tries, want nil after 3", err, n)
	}

	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("no"))
	calls := 0
	if err := untilReachable(context.Background(), clk, "test", func() error { calls++; return forbidden }); err != forbidden || calls != 1 {
		t.Errorf("a refusal: %v after %d tries, want it returned after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := untilReachable(ctx, clk, "test", func() error { return refused }); !errors.Is(err, context.Canceled) {
		t.Errorf("with ctx ended: %v", err)
	}
}
