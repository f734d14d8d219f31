package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

func counterValue(t *testing.T, m metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func gaugeValue(t *testing.T, m metrics.GaugeMetric) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fakeKernel records payloads; the next fail restores fail. restored, if
// set, hears of each restore.
type fakeKernel struct {
	payloads []string
	bases    int
	lists    int
	fail     int
	restored chan error
}

func (f *fakeKernel) ensureBase() error { f.bases++; return nil }

func (f *fakeKernel) restore(_ context.Context, payload []byte) error {
	f.payloads = append(f.payloads, string(payload))
	var err error
	if f.fail > 0 {
		f.fail--
		err = errors.New("iptables-restore: exit status 1")
	}
	if f.restored != nil {
		f.restored <- err
	}
	return err
}

func (f *fakeKernel) serviceChains(context.Context) (map[string]bool, error) {
	f.lists++
	return nil, nil
}

// fakeProxier returns a proxier on a fake kernel.
func fakeProxier(t *testing.T) (*Proxier, *fakeKernel) {
	p, err := New(Config{NodeName: "n1", PodCIDR: "10.244.1.0/24"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fk := &fakeKernel{}
	p.kernel, p.forget = fk, func([]staleFlow) error { return nil }
	return p, fk
}

// TestSyncFallsBackToFull checks the sync's decisions against a fake
// kernel: the first sync is full, a partial one writes only what changed,
// nothing changed writes nothing, a periodic full sync trusts what the
// last one wrote, and a failed restore is counted and makes the next sync
// full, which lists the kernel's chains and writes everything again.
func TestSyncFallsBackToFull(t *testing.T) {
	p, fk := fakeProxier(t)
	ctx := context.Background()
	p.changes.service(labService("web", "10.96.0.20"), false)
	p.changes.slice(labSlice("web", "10.244.1.2"), false)
	if err := p.sync(ctx); err != nil || fk.bases != 1 || !strings.Contains(fk.payloads[0], ":KUBE-SERVICES") {
		t.Fatalf("first sync: err %v, base set up %d times, payload:\n%s", err, fk.bases, fk.payloads[0])
	}
	if err := p.sync(ctx); err != nil || len(fk.payloads) != 1 {
		t.Errorf("a sync with nothing changed wrote %d payloads", len(fk.payloads)-1)
	}
	p.needFull = true
	if err := p.sync(ctx); err != nil || fk.lists != 1 || len(fk.payloads) != 2 {
		t.Errorf("a periodic full sync: err %v, kernel listed %d times, %d payloads", err, fk.lists, len(fk.payloads))
	}
	fk.payloads = fk.payloads[:1]

	failures := counterValue(t, restoreFailures)
	fk.fail = 1
	p.changes.slice(labSlice("web", "10.244.1.3"), false)
	if err := p.sync(ctx); err == nil || !p.needFull || counterValue(t, restoreFailures) != failures+1 {
		t.Fatalf("a failed restore: err %v, full sync due %v, failures %v", err, p.needFull, counterValue(t, restoreFailures)-failures)
	}
	if strings.Contains(fk.payloads[1], ":KUBE-SERVICES") {
		t.Errorf("the failed sync was partial, yet rewrote KUBE-SERVICES:\n%s", fk.payloads[1])
	}
	if err := p.sync(ctx); err != nil || fk.bases != 3 || fk.lists != 2 || !strings.Contains(fk.payloads[2], ":KUBE-SERVICES") ||
		!strings.Contains(fk.payloads[2], "10.244.1.3:8080") {
		t.Errorf("the sync after a failure: err %v, bases %d, lists %d, payload:\n%s", err, fk.bases, fk.lists, fk.payloads[2])
	}
	if gaugeValue(t, lastSync) == 0 {
		t.Error("sync metrics not recorded")
	}
}

// TestSyncedTellsReadyPods: Synced hears, once the rules are in, of each
// pod whose endpoint became ready: not before a restore succeeds, not
// again while it stays ready, and again once it is ready after it was
// not.
func TestSyncedTellsReadyPods(t *testing.T) {
	p, fk := fakeProxier(t)
	var told []string
	p.cfg.Synced = func(pods []ReadyPod, start, end time.Time) {
		for _, r := range pods {
			told = append(told, fmt.Sprintf("%s/%s %s %s", r.Namespace, r.Name, r.UID, r.Service))
		}
	}
	slice := labSlice("web", "10.244.1.2", "10.244.1.3")
	for i := range slice.Endpoints {
		slice.Endpoints[i].TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprint("web-", i), UID: types.UID(fmt.Sprint("u", i))}
	}
	slice.Endpoints[1].Conditions.Ready = new(false)
	p.changes.service(labService("web", "10.96.0.20"), false)
	p.changes.slice(slice, false)
	ctx := context.Background()
	fk.fail = 1
	if err := p.sync(ctx); err == nil || len(told) != 0 {
		t.Fatalf("a failed sync: err %v, told %v", err, told)
	}
	if err := p.sync(ctx); err != nil || !slices.Equal(told, []string{"default/web-0 u0 default/web:http"}) {
		t.Fatalf("the sync after it: err %v, told %v", err, told)
	}
	slice = slice.DeepCopy()
	slice.Endpoints[1].Conditions.Ready = new(true)
	p.changes.slice(slice, false)
	if err := p.sync(ctx); err != nil || !slices.Equal(told[1:], []string{"default/web-1 u1 default/web:http"}) {
		t.Errorf("web-1 ready: err %v, told %v", err, told)
	}
	checkServiceView(t, p, slice)
}

// checkServiceView: the proxy's view of a service is what its rules hold,
// made from the slices it names; a change that leaves the rules as they
// are still moves the view to the new slices; a deleted service has none.
func checkServiceView(t *testing.T, p *Proxier, slice *discovery.EndpointSlice) {
	t.Helper()
	ctx := context.Background()
	v, ok := p.Service("default", "web")
	if !ok || len(v.Ports) != 1 || v.Ports[0].Name != "default/web:http" || len(v.Ports[0].Endpoints) != 2 {
		t.Fatalf("view of default/web: %v %+v", ok, v)
	}
	if e := v.Ports[0].Endpoints[1]; e != (EndpointView{Address: "10.244.1.3:8080", Ready: true, Local: true, Pod: "default/web-1"}) {
		t.Errorf("endpoint %+v", e)
	}
	slice = slice.DeepCopy()
	slice.ResourceVersion, slice.Labels["unrelated"] = "42", "change"
	p.changes.slice(slice, false)
	if err := p.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Service("default", "web"); v.Slices[slice.Name] != "42" {
		t.Errorf("after a change that leaves the rules: slices %v, want %s at 42", v.Slices, slice.Name)
	}
	p.changes.service(labService("web", "10.96.0.20"), true)
	if err := p.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Service("default", "web"); ok {
		t.Error("a deleted service still has a view")
	}
}

// TestLoopBacksOff runs the sync loop on a fake clock: the first sync at
// once; a failed full sync retried after MinSyncPeriod, then twice that,
// and so on; nothing in between.
func TestLoopBacksOff(t *testing.T) {
	p, fk := fakeProxier(t)
	clk := testingclock.NewFakeClock(time.Now())
	p.cfg.Clock = clk
	fk.fail, fk.restored = 3, make(chan error)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.loop(ctx)

	syncs := func(want string) {
		t.Helper()
		select {
		case err := <-fk.restored:
			if got := fmt.Sprint(err == nil); got != want {
				t.Fatalf("a sync that succeeded: %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no sync")
		}
	}
	quiet := func(after time.Duration) {
		t.Helper()
		waitForWaiters(t, clk)
		clk.Step(after)
		select {
		case <-fk.restored:
			t.Fatalf("a sync %s after the last, before its back-off ended", after)
		case <-time.After(100 * time.Millisecond):
		}
	}
	waitForWaiters(t, clk)
	clk.Step(0)
	syncs("false")
	for _, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		quiet(delay - time.Millisecond)
		clk.Step(time.Millisecond)
		syncs(fmt.Sprint(delay == 4*time.Second))
	}
}

// waitForWaiters waits until the loop waits on the clock: on its
// periodic ticker and its retry timer.
func waitForWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); clk.Waiters() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the loop does not wait on its clock")
		}
	}
}

// TestLargeClusterMode checks kube-proxy's large cluster mode: beyond 1000
// endpoints the endpoints' rules lose their comments, and crossing the
// threshold either way rewrites everything.
func TestLargeClusterMode(t *testing.T) {
	p, fk := fakeProxier(t)
	ctx := context.Background()
	ips := make([]string, largeClusterEndpoints+1)
	for i := range ips {
		ips[i] = fmt.Sprintf("10.244.%d.%d", 1+i/250, 1+i%250)
	}
	p.changes.service(labService("web", "10.96.0.20"), false)
	p.changes.slice(labSlice("web", ips...), false)
	if err := p.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if large := fk.payloads[0]; strings.Contains(large, "default/web:http -> ") || !strings.Contains(large, "default/web:http cluster IP") {
		t.Errorf("1001 endpoints: endpoint comments kept or service comments lost")
	}
	p.changes.slice(labSlice("web", ips[:2]...), false)
	if err := p.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if small := fk.payloads[1]; !strings.Contains(small, ":KUBE-SERVICES") || !strings.Contains(small, "default/web:http -> 10.244.1.1:8080") {
		t.Errorf("back to 2 endpoints: not a full sync with comments:\n%s", small)
	}
}
