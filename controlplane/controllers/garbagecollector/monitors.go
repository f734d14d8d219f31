package garbagecollector

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// monitor is the informer of one collectable resource.
type monitor struct {
	stop   context.CancelFunc
	synced cache.InformerSynced
}

// soonAfterChange is how discovery is asked again after a CRD or an
// APIService changed: a CRD shows in discovery a moment after it is
// established, so the collector asks a few times, backing off, until the
// resources change (then it goes back to every resyncPeriod).
var soonAfterChange = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 6}

// resourcesMayHaveChanged asks followDiscovery to look again soon.
func (c *Controller) resourcesMayHaveChanged() {
	select {
	case c.rediscover <- struct{}{}:
	default:
	}
}

// followDiscovery keeps the monitors to what discovery lists, asking it
// every resyncPeriod and soon after a resource that defines resources
// changes, until ctx ends.
func (c *Controller) followDiscovery(ctx context.Context) {
	timer := time.NewTimer(resyncPeriod)
	defer timer.Stop()
	var soon wait.Backoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.rediscover:
			soon = soonAfterChange
			timer.Reset(soon.Step())
			continue
		case <-timer.C:
		}
		next := resyncPeriod
		if !c.resync(ctx) && soon.Steps > 0 {
			next = soon.Step()
		} else {
			soon = wait.Backoff{}
		}
		timer.Reset(next)
	}
}

// resync asks discovery for the collectable resources and, when they
// changed, starts informers for the new ones (waiting up to resyncPeriod
// for them to list) and stops those of resources gone. It says whether
// they changed. Objects of a resource gone stay in the graph until an
// attempt to delete them finds them gone too.
func (c *Controller) resync(ctx context.Context) bool {
	lists, err := c.discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		slog.Warn("garbage collector discovery", "err", err)
		return false
	}
	gvrs := c.keepFailedGroups(collectableResources(lists), err)
	if !c.monitorsDiffer(gvrs) {
		return false
	}
	c.mapper.Reset()
	wctx, cancel := context.WithTimeout(ctx, resyncPeriod)
	defer cancel()
	if !c.syncMonitors(wctx, gvrs) && ctx.Err() == nil {
		slog.Warn("garbage collector: informers of new resources have not listed yet", "waited", resyncPeriod)
	}
	slog.Info("garbage collector resources changed", "resources", len(gvrs))
	return true
}

// keepFailedGroups adds to gvrs the watched resources of the group
// versions whose discovery failed (err): a group that does not answer
// for a moment keeps its monitors, as kube's collector does.
func (c *Controller) keepFailedGroups(gvrs []schema.GroupVersionResource, err error) []schema.GroupVersionResource {
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		return gvrs
	}
	for gvr := range c.monitors {
		if _, ok := failed.Groups[gvr.GroupVersion()]; ok && !slices.Contains(gvrs, gvr) {
			gvrs = append(gvrs, gvr)
		}
	}
	return gvrs
}

func (c *Controller) monitorsDiffer(gvrs []schema.GroupVersionResource) bool {
	if len(gvrs) != len(c.monitors) {
		return true
	}
	for _, gvr := range gvrs {
		if c.monitors[gvr] == nil {
			return true
		}
	}
	return false
}

// syncMonitors makes the monitors those of gvrs and waits until the new
// ones have listed (false if ctx ended first). A resource whose monitor
// cannot start is left out, to be tried at the next resync.
func (c *Controller) syncMonitors(ctx context.Context, gvrs []schema.GroupVersionResource) bool {
	want := map[schema.GroupVersionResource]bool{}
	var synced []cache.InformerSynced
	for _, gvr := range gvrs {
		want[gvr] = true
		if c.monitors[gvr] != nil {
			continue
		}
		m, err := c.startMonitor(gvr)
		if err != nil {
			slog.Error("garbage collector informer", "resource", gvr.String(), "err", err)
			continue
		}
		c.monitors[gvr] = m
		synced = append(synced, m.synced)
	}
	for gvr, m := range c.monitors {
		if !want[gvr] {
			m.stop()
			delete(c.monitors, gvr)
		}
	}
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// startMonitor runs a metadata-only informer (PartialObjectMetadata in
// protobuf, as kube-controller-manager's) of gvr into the graph until
// stopped.
func (c *Controller) startMonitor(gvr schema.GroupVersionResource) (*monitor, error) {
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	informer := metadatainformer.NewFilteredMetadataInformer(c.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if err := informer.SetTransform(withoutManagedFields); err != nil {
		return nil, err
	}
	reg, err := informer.AddEventHandler(c.handler(gvr, gvk))
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	c.monitorsDone.Go(func() { informer.RunWithContext(ctx) })
	return &monitor{stop: stop, synced: reg.HasSynced}, nil
}

// stopMonitors stops every informer and waits for them to end.
func (c *Controller) stopMonitors() {
	for gvr, m := range c.monitors {
		m.stop()
		delete(c.monitors, gvr)
	}
	c.monitorsDone.Wait()
}
