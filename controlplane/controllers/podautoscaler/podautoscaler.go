// Package podautoscaler scales the targets of HorizontalPodAutoscalers
// as kube-controller-manager's horizontal-pod-autoscaler controller does:
// every 15 seconds it reads the target's scale subresource, the target's
// pods and their cpu and memory usage from the metrics API, computes for
// each Resource and ContainerResource metric the replica count that
// brings it to its target (replicas.go), keeps the highest, stabilizes
// and bounds it by min and max replicas and spec.behavior (behavior.go),
// sets it on the scale subresource (reconcile.go) and reports in the
// autoscaler's status and in events. skiff serves no custom or external
// metrics API, so Pods, Object and External metrics always fail. What
// the controller remembers between syncs, recent recommendations and
// rescales, lives in memory and is lost on a restart, as upstream's.
package podautoscaler

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "horizontalpodautoscaler"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "horizontal-pod-autoscaler"
	// workers is kube-controller-manager's --concurrent-horizontal-pod-autoscaler-syncs.
	workers = 5
	// syncPeriod is how often every autoscaler is synced, and how soon
	// one that failed is tried again (--horizontal-pod-autoscaler-sync-period).
	syncPeriod = 15 * time.Second
)

// Controller scales the targets of autoscalers; its queue holds
// autoscaler keys (namespace/name).
type Controller struct {
	client    kubernetes.Interface
	hpas      autoscalinglisters.HorizontalPodAutoscalerLister
	pods      corelisters.PodLister
	scales    scaleClient
	metrics   metricsReader
	recorder  record.EventRecorder
	queue     workqueue.TypedRateLimitingInterface[string]
	histories *histories
	clock     clock.PassiveClock
}

var _ component.Component = (*Controller)(nil)

// New builds the horizontal pod autoscaler controller on cc's shared
// informers; targets' scales and pod metrics are read with cc.Dynamic.
func New(cc component.Context) (component.Component, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cc.Client.Discovery()))
	return newController(cc, &targets{dynamic: cc.Dynamic, mapper: mapper}, resourceMetrics{cc.Dynamic}, clock.RealClock{})
}

func newController(cc component.Context, scales scaleClient, metrics metricsReader, clk clock.PassiveClock) (*Controller, error) {
	hpas := cc.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	pods := cc.Informers.Core().V1().Pods()
	c := &Controller{
		client:    cc.Client,
		hpas:      hpas.Lister(),
		pods:      pods.Lister(),
		scales:    scales,
		metrics:   metrics,
		recorder:  cc.Recorder(eventSource),
		queue:     component.NewQueue(controllerName, component.WithBackoff(syncPeriod, syncPeriod)),
		histories: &histories{byKey: map[string]*history{}, selectors: map[string]labels.Selector{}},
		clock:     clk,
	}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(informer.Handler{Name: "horizontalpodautoscaler", Informer: hpas.Informer(),
		Funcs: cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: c.updated, DeleteFunc: enqueue}})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs autoscalers until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

// updated syncs an autoscaler at once when its spec changed; a change of
// status, which the controller itself writes, waits for the next period.
func (c *Controller) updated(old, cur any) {
	o, n := old.(*autoscalingv2.HorizontalPodAutoscaler), cur.(*autoscalingv2.HorizontalPodAutoscaler)
	key := n.Namespace + "/" + n.Name
	if o.Generation == n.Generation {
		c.queue.AddAfter(key, syncPeriod)
		return
	}
	c.queue.Add(key)
}

// sync autoscales one autoscaler and schedules its next sync; a deleted
// one's history is forgotten.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hpa, err := c.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.histories.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	c.queue.AddAfter(key, syncPeriod)
	return c.reconcile(ctx, key, hpa)
}

// histories are the autoscalers' histories and their targets' selectors
// by key. It is safe for concurrent use; a history itself belongs to
// the worker syncing its key.
type histories struct {
	mu        sync.Mutex
	byKey     map[string]*history
	selectors map[string]labels.Selector
}

func (h *histories) get(key string) *history {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byKey[key] == nil {
		h.byKey[key] = &history{}
	}
	return h.byKey[key]
}

func (h *histories) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byKey, key)
	delete(h.selectors, key)
}

// selecting records sel as key's selector and returns, sorted, the keys
// of up to two autoscalers of key's namespace (key among them) whose
// selectors select any of pods.
func (h *histories) selecting(key string, sel labels.Selector, pods []*corev1.Pod) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.selectors[key] = sel
	ns, _, _ := strings.Cut(key, "/")
	var keys []string
	for other, s := range h.selectors {
		if strings.HasPrefix(other, ns+"/") && slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return s.Matches(labels.Set(p.Labels)) }) {
			keys = append(keys, other)
		}
		if len(keys) == 2 {
			break
		}
	}
	slices.Sort(keys)
	return keys
}
