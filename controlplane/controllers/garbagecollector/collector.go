// Package garbagecollector deletes objects whose owners are gone, as
// kube-controller-manager's garbage collector does. It watches every
// resource discovery lists with list, watch and delete (events excepted),
// keeping only metadata, and builds a graph from owners to dependents by
// UID. It asks discovery again every 30 s and soon after a CRD or an
// APIService changes, and watches the resources that came, not those that
// went. Then:
//
//   - Background: a dependent whose owners are all gone (deleted, or not
//     found by a GET, or found with another UID) is deleted; one that
//     still has an owner only loses its references to the gone ones.
//   - Foreground: an owner being deleted with the foregroundDeletion
//     finalizer has its dependents deleted (those with dependents of their
//     own in the foreground too) and keeps the finalizer until no dependent
//     with blockOwnerDeletion=true is left.
//   - Orphan: an owner being deleted with the orphan finalizer has its
//     references removed from its dependents, then the finalizer.
//
// The API server adds those finalizers for deletes with
// propagationPolicy Foreground or Orphan, and deletes an object once its
// last finalizer is gone.
package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/lru"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	deleteWorkers = 10
	orphanWorkers = 2
	// absentCacheSize is how many owners known to be gone are remembered,
	// saving a GET per dependent.
	absentCacheSize = 500
	// discoveryRetry is how often discovery is tried until it answers.
	discoveryRetry = 5 * time.Second
	// resyncPeriod is how often the collector asks discovery again for
	// the resources to watch (kube-controller-manager's period), and how
	// long it waits for a new resource's informer to list.
	resyncPeriod = 30 * time.Second
)

// ignoredResources are never collected (kube's garbage collector ignores
// events too: they are many, short-lived and never owners).
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// definesResources are the resources whose changes add or remove
// resources: the collector asks discovery again when one changes.
var definesResources = map[schema.GroupResource]bool{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:             true,
}

// Controller is the garbage collector. Work is keyed by object UID on two
// queues, one for objects that may have to go and one for owners whose
// dependents are to be orphaned; a queue never hands one UID to two
// workers at once.
type Controller struct {
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	graph     *graph
	// absent holds owners (by identity) known not to exist.
	absent      *lru.Cache
	deleteQueue workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[string]
	// monitors watch the collectable resources; only Run's goroutine
	// touches the map.
	monitors map[schema.GroupVersionResource]*monitor
	// monitorsDone counts the running monitors' informers.
	monitorsDone sync.WaitGroup
	// rediscover is signalled when a resource that defines resources
	// (a CRD, an APIService) changes.
	rediscover chan struct{}
}

var _ component.Component = (*Controller)(nil)

// New builds the garbage collector. Its informers (monitors.go) are its
// own and start in Run, once discovery has answered.
func New(cc component.Context) (component.Component, error) {
	disc := cc.Client.Discovery()
	return &Controller{
		dynamic:     cc.Dynamic,
		metadata:    cc.Metadata,
		discovery:   disc,
		mapper:      restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		graph:       newGraph(),
		absent:      lru.New(absentCacheSize),
		deleteQueue: component.NewQueue("garbage_collector_attempt_to_delete"),
		orphanQueue: component.NewQueue("garbage_collector_attempt_to_orphan"),
		monitors:    map[schema.GroupVersionResource]*monitor{},
		rediscover:  make(chan struct{}, 1),
	}, nil
}

// Run watches every collectable resource, waits until the graph holds
// what the informers listed, then works until ctx ends, following the
// resources discovery lists as they come and go.
func (c *Controller) Run(ctx context.Context) {
	gvrs, err := c.collectable(ctx)
	if err != nil {
		return // ctx ended
	}
	defer c.stopMonitors()
	if !c.syncMonitors(ctx, gvrs) {
		return
	}
	slog.Info("garbage collector graph synced", "resources", len(gvrs))
	var wg sync.WaitGroup
	wg.Go(func() {
		component.RunWorkers(ctx, "garbagecollector", c.deleteQueue, deleteWorkers, c.attemptToDelete)
	})
	wg.Go(func() {
		component.RunWorkers(ctx, "garbagecollector-orphan", c.orphanQueue, orphanWorkers, c.attemptToOrphan)
	})
	c.followDiscovery(ctx)
	wg.Wait()
}

// collectable lists the resources to watch, retrying discovery until it
// answers. Group versions that fail discovery are left out.
func (c *Controller) collectable(ctx context.Context) ([]schema.GroupVersionResource, error) {
	var gvrs []schema.GroupVersionResource
	err := wait.PollUntilContextCancel(ctx, discoveryRetry, true, func(context.Context) (bool, error) {
		lists, err := c.discovery.ServerPreferredResources()
		if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			slog.Warn("garbage collector discovery", "err", err)
			return false, nil
		}
		gvrs = collectableResources(lists)
		return true, nil
	})
	return gvrs, err
}

// collectableResources are the resources in lists that can be listed,
// watched and deleted, subresources and ignored resources left out.
func collectableResources(lists []*metav1.APIResourceList) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, l := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete"}}, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || ignoredResources[gvr.GroupResource()] {
				continue
			}
			out = append(out, gvr)
		}
	}
	return out
}

// withoutManagedFields drops what the collector never reads from an
// informer's object.
func withoutManagedFields(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		m.ManagedFields = nil
	}
	return obj, nil
}

func (c *Controller) handler(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) cache.ResourceEventHandler {
	changed := func() {}
	if definesResources[gvr.GroupResource()] {
		changed = c.resourcesMayHaveChanged
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			c.observed(gvr, gvk, obj)
			changed()
		},
		UpdateFunc: func(_, cur any) {
			c.observed(gvr, gvk, cur)
			changed()
		},
		DeleteFunc: func(obj any) {
			if m, ok := informer.FromTombstone[metav1.Object](obj); ok {
				c.enqueue(c.graph.remove(m.GetUID()))
			}
			changed()
		},
	}
}

// observed puts an informer's object of kind gvk (its own type says
// PartialObjectMetadata) into the graph.
func (c *Controller) observed(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	c.enqueue(c.graph.upsert(object{
		identity:   identity{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()},
		GVR:        gvr,
		Owners:     m.GetOwnerReferences(),
		Finalizers: m.GetFinalizers(),
		Deleting:   m.GetDeletionTimestamp() != nil,
	}))
}

func (c *Controller) enqueue(w work) {
	for _, uid := range w.attemptDelete {
		c.deleteQueue.Add(string(uid))
	}
	for _, uid := range w.orphan {
		c.orphanQueue.Add(string(uid))
	}
}

// absentKey identifies an owner known to be gone: by UID and by where it
// was looked for, so that a reference naming a UID from another namespace
// cannot make a real owner count as gone.
type absentKey struct {
	uid       types.UID
	group     string
	kind      string
	namespace string
	name      string
}

func keyFor(id identity) absentKey {
	gv, _ := schema.ParseGroupVersion(id.APIVersion)
	return absentKey{uid: id.UID, group: gv.Group, kind: id.Kind, namespace: id.Namespace, name: id.Name}
}

// resourceFor maps an identity's kind to its resource and scope, and
// clears the namespace of cluster-scoped objects.
func (c *Controller) resourceFor(id identity) (schema.GroupVersionResource, identity, error) {
	gv, err := schema.ParseGroupVersion(id.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}, id, fmt.Errorf("owner %s/%s: %w", id.Kind, id.Name, err)
	}
	mapping, err := c.mapper.RESTMapping(gv.WithKind(id.Kind).GroupKind(), gv.Version)
	if err != nil {
		c.mapper.Reset() // the kind may be new
		return schema.GroupVersionResource{}, id, fmt.Errorf("map %s %s: %w", id.APIVersion, id.Kind, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		id.Namespace = ""
	}
	return mapping.Resource, id, nil
}
