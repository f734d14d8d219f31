package component_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// Short election timings, so that a lost lease shows within seconds.
const (
	testLease   = 4 * time.Second
	testRenew   = 3 * time.Second
	testRetry   = 500 * time.Millisecond
	testLeaseNS = "kube-system"
)

func testElection(cfg *rest.Config, name string) component.Election {
	return component.Election{Config: cfg, Namespace: testLeaseNS, Name: name, Identity: "me",
		LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry}
}

// leads counts lead's runs and the most that ran at once.
type leads struct {
	started, running, most atomic.Int32
	stopped                chan time.Time
}

func newLeads() *leads { return &leads{stopped: make(chan time.Time, 10)} }

func (l *leads) lead(ctx context.Context) {
	l.started.Add(1)
	n := l.running.Add(1)
	if n > l.most.Load() {
		l.most.Store(n)
	}
	<-ctx.Done()
	time.Sleep(300 * time.Millisecond) // a component that takes a while to stop
	l.running.Add(-1)
	l.stopped <- time.Now()
}

func (l *leads) waitStarted(t *testing.T, n int32, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for l.started.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("lead started %d times, want %d within %s", l.started.Load(), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Now()
}

// TestElectionKeepsLeaseWhileComponentsClientIsFlooded saturates a
// throttled client (QPS 5) with 40 busy goroutines, so that one more
// request through it waits longer than the renew deadline, and shows that
// the election, built from the same configuration but with a client of its
// own, keeps renewing: one lead, never stopped, no Lease transition.
func TestElectionKeepsLeaseWhileComponentsClientIsFlooded(t *testing.T) {
	s := servertest.Start(t)
	cfg := s.RESTConfig()
	cfg.QPS, cfg.Burst = 5, 5
	flooded := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 40 {
		go func() {
			for ctx.Err() == nil {
				_, _ = flooded.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			}
		}()
	}
	l := newLeads()
	go func() { _ = component.RunElected(ctx, testElection(cfg, "flood-test"), l.lead) }()
	l.waitStarted(t, 1, 10*time.Second)
	start := time.Now()
	if _, err := flooded.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < testRenew {
		t.Fatalf("a request through the flooded client took %s; the flood does not hold it past the renew deadline %s", waited, testRenew)
	}
	time.Sleep(2 * testLease)
	lease := getLease(t, s.Client(), "flood-test")
	if got := l.started.Load(); got != 1 || len(l.stopped) != 0 {
		t.Errorf("lead started %d times and stopped %d times during the flood; want 1 and 0", got, len(l.stopped))
	}
	if lease.Spec.LeaseTransitions != nil && *lease.Spec.LeaseTransitions != 0 {
		t.Errorf("%d lease transitions", *lease.Spec.LeaseTransitions)
	}
	if age := time.Since(lease.Spec.RenewTime.Time); age > testRenew {
		t.Errorf("lease last renewed %s ago", age)
	}
}

// TestElectionLostStopsLeadAndCampaignsAgain takes the Lease away (another
// holder writes it): lead's ctx ends, lead returns, and the election
// campaigns again at once, leading again as soon as the other holder's
// lease runs out. lead never runs twice at once.
func TestElectionLostStopsLeadAndCampaignsAgain(t *testing.T) {
	s := servertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newLeads()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = component.RunElected(ctx, testElection(s.RESTConfig(), "steal-test"), l.lead)
	}()
	l.waitStarted(t, 1, 10*time.Second)
	client := s.Client()
	// The holder renews every retry period: steal on a fresh copy until
	// no renewal comes between the read and the write.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := getLease(t, client, "steal-test")
		thief, seconds, now := "thief", int32(testLease/time.Second), metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &thief, &seconds, &now
		_, err := client.CoordinationV1().Leases(testLeaseNS).Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var stopped time.Time
	select {
	case stopped = <-l.stopped:
	case <-time.After(testRenew + 2*testRetry + 2*time.Second):
		t.Fatal("lead still running after the lease was taken")
	}
	again := l.waitStarted(t, 2, testLease+testRetry+5*time.Second)
	// The new campaign first sees the thief's record when lead has
	// stopped, waits out the lease from then, and retries every retry
	// period stretched by up to client-go's jitter; one more retry period
	// covers the requests themselves on a busy machine.
	jittered := time.Duration(float64(testRetry) * (1 + leaderelection.JitterFactor))
	if without, limit := again.Sub(stopped), testLease+jittered+testRetry; without > limit {
		t.Errorf("without a leader for %s after lead stopped; want at most the lease duration %s plus a jittered retry (%s)", without, testLease, limit)
	}
	if most := l.most.Load(); most != 1 {
		t.Errorf("lead ran %d times at once", most)
	}
	cancel()
	<-done
	if lease := getLease(t, client, "steal-test"); lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("lease still held by %q after the election ended", *lease.Spec.HolderIdentity)
	}
}

func getLease(t *testing.T, client kubernetes.Interface, name string) *coordinationv1.Lease {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(testLeaseNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lease
}
