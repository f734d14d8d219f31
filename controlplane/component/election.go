package component

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Election timings, kube-controller-manager's defaults.
const (
	LeaseDuration = 15 * time.Second
	RenewDeadline = 10 * time.Second
	RetryPeriod   = 2 * time.Second
)

// Election is a leader election over a coordination.k8s.io Lease.
type Election struct {
	// Config reaches the API server. RunElected builds the election's own
	// client from it, with its own rate limiter (and its own connections
	// when the config has a dialer of its own, as the loopback's has), so
	// that no amount of the components' traffic can hold up a renewal
	// (kube-controller-manager and kube-scheduler keep theirs apart too).
	Config    *rest.Config
	Namespace string
	Name      string
	Identity  string
	// LeaseDuration, RenewDeadline and RetryPeriod default to the
	// constants above when zero.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// RunElected runs lead whenever e.Identity holds the Lease, until ctx
// ends. When the Lease is lost, lead's ctx ends; RunElected waits for
// lead to return and then campaigns again at once, so lead never runs
// twice at the same time. On ctx's end a held Lease is released.
func RunElected(ctx context.Context, e Election, lead func(ctx context.Context)) error {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(e.Config))
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	var stopped time.Time // when lead last returned
	for ctx.Err() == nil {
		var led atomic.Bool
		done := make(chan struct{})
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   orDefault(e.LeaseDuration, LeaseDuration),
			RenewDeadline:   orDefault(e.RenewDeadline, RenewDeadline),
			RetryPeriod:     orDefault(e.RetryPeriod, RetryPeriod),
			ReleaseOnCancel: true,
			Name:            e.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					led.Store(true)
					defer close(done)
					logLeading(e, stopped)
					lead(ctx)
				},
				OnStoppedLeading: func() {},
			},
		})
		// RunOrDie starts lead in a goroutine once the Lease is won and
		// returns when it is lost; lead has by then been running for at
		// least a retry period.
		if led.Load() {
			<-done
			stopped = time.Now()
			if ctx.Err() == nil {
				slog.Warn("leadership lost, campaigning again", "lease", e.Name, "identity", e.Identity)
			}
		}
	}
	return nil
}

// logLeading says that this identity leads, and after how long without a
// leader here when it had led before.
func logLeading(e Election, stopped time.Time) {
	if stopped.IsZero() {
		slog.Info("leading", "lease", e.Name, "identity", e.Identity)
		return
	}
	slog.Warn("leading again", "lease", e.Name, "identity", e.Identity, "without", time.Since(stopped).Round(time.Millisecond))
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
