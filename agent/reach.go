package agent

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// unreachable says err is the server not answering (down, restarting,
// overloaded, or the network between), which is worth waiting out; a
// refusal (a bad token, a CA that does not match, 403) is not.
func unreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.As(err, &netErr) && netErr.Timeout() ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err)
}

// serverBackoff spaces the tries to reach an unreachable server: 1 s,
// doubling up to 30 s, with jitter.
func serverBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 30 * time.Second, Steps: math.MaxInt32}
}

// untilReachable runs try until it succeeds, fails for another reason than
// an unreachable server, or ctx ends. Between tries it waits with
// serverBackoff, saying so once per try; the agent never gives up on its
// server (its pods keep running meanwhile).
func untilReachable(ctx context.Context, clk clock.Clock, what string, try func() error) error {
	b := serverBackoff()
	for failures := 0; ; failures++ {
		err := try()
		if err == nil || !unreachable(err) {
			if err == nil && failures > 0 {
				slog.Info("server reached", "for", what, "after", failures+1)
			}
			return err
		}
		delay := b.Step()
		slog.Warn("server not reachable, retrying", "for", what, "in", delay.Round(100*time.Millisecond), "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(delay):
		}
	}
}
