// Package podgc deletes pods nobody else will finish, as
// kube-controller-manager's pod garbage collector does: pods bound to
// nodes that no longer exist (after a quarantine and a GET that shows the
// node really is gone), terminating pods that were never scheduled or sit
// on an out-of-service node, and terminated pods beyond a threshold,
// oldest first. Pods that are not yet terminal are marked Failed first;
// deletions are forced (grace period 0).
package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// Config configures the collector; zero fields take the defaults noted.
type Config struct {
	// TerminatedPodThreshold is how many terminated pods are kept;
	// default 12500, negative keeps them all.
	TerminatedPodThreshold int
	// Quarantine is how long a node pods are bound to must be missing from
	// the cache before it is looked for on the API server; default 40s.
	Quarantine time.Duration
	// Period is how often a pass runs; default 20s.
	Period time.Duration
}

func (cfg Config) withDefaults() Config {
	if cfg.TerminatedPodThreshold == 0 {
		cfg.TerminatedPodThreshold = 12500
	}
	if cfg.Quarantine <= 0 {
		cfg.Quarantine = 40 * time.Second
	}
	if cfg.Period <= 0 {
		cfg.Period = 20 * time.Second
	}
	return cfg
}

// passKey is the one key of the queue: a pass over every pod.
const passKey = "pass"

// Controller is the pod garbage collector. Passes run one at a time.
type Controller struct {
	cfg    Config
	client kubernetes.Interface
	clock  clock.Clock
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	queue  workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	missing quarantine
}

var _ component.Component = (*Controller)(nil)

// New returns a constructor for the collector with cfg.
func New(cfg Config) component.Constructor {
	return func(cc component.Context) (component.Component, error) {
		return newController(cc, cfg, clock.RealClock{})
	}
}

func newController(cc component.Context, cfg Config, clk clock.Clock) (*Controller, error) {
	c := &Controller{
		cfg: cfg.withDefaults(), client: cc.Client, clock: clk,
		pods:    cc.Informers.Core().V1().Pods().Lister(),
		nodes:   cc.Informers.Core().V1().Nodes().Lister(),
		queue:   component.NewQueue("podgc"),
		missing: quarantine{},
	}
	// A deleted node starts its quarantine at once, not at the next pass.
	if _, err := cc.Informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.nodeDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run passes over the pods every Period, and a quarantine after a node
// is deleted, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.queue.Add(passKey)
	component.RunWorkers(ctx, "podgc", c.queue, 1, c.pass)
}

func (c *Controller) nodeDeleted(obj any) {
	key, ok := component.KeyOf(obj)
	if !ok {
		return
	}
	c.mu.Lock()
	if _, seen := c.missing[key]; !seen {
		c.missing[key] = c.clock.Now()
	}
	c.mu.Unlock()
	c.queue.AddAfter(passKey, c.cfg.Quarantine)
}

// pass deletes what the collector deletes and schedules the next pass.
func (c *Controller) pass(ctx context.Context, _ string) error {
	defer c.queue.AddAfter(passKey, c.cfg.Period)
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	errs := []error{
		c.deleteAll(ctx, terminatedToDelete(pods, c.cfg.TerminatedPodThreshold), nil, "terminated pods over the threshold"),
		c.deleteAll(ctx, terminatingOutOfService(pods, nodes), nil, "terminating on an out-of-service node"),
		c.deleteAll(ctx, unscheduledTerminating(pods), nil, "terminating, never scheduled"),
	}
	gone, err := c.goneNodes(ctx, missingNodes(pods, nodes))
	errs = append(errs, err)
	orphaned := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists"}
	errs = append(errs, c.deleteAll(ctx, podsOn(pods, gone), orphaned, "bound to a node that no longer exists"))
	return errors.Join(errs...)
}

// goneNodes returns the missing nodes that have been out of the cache for
// the quarantine and that the API server does not know either.
func (c *Controller) goneNodes(ctx context.Context, missing sets.Set[string]) (sets.Set[string], error) {
	c.mu.Lock()
	due, next := c.missing.due(missing, c.clock.Now(), c.cfg.Quarantine)
	c.mu.Unlock()
	if next > 0 {
		c.queue.AddAfter(passKey, next)
	}
	gone := sets.New[string]()
	var errs []error
	for name := range due {
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone.Insert(name)
		case err != nil:
			errs = append(errs, fmt.Errorf("check node %s: %w", name, err))
		}
	}
	return gone, errors.Join(errs...)
}

// deleteAll marks each pod Failed (with condition, if given) unless it
// already terminated, then deletes it without a grace period.
func (c *Controller) deleteAll(ctx context.Context, pods []*corev1.Pod, condition *corev1.PodCondition, why string) error {
	var errs []error
	for _, pod := range pods {
		if err := c.markFailedAndDelete(ctx, pod, condition); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		slog.Info("pod garbage collected", "namespace", pod.Namespace, "pod", pod.Name, "node", pod.Spec.NodeName, "reason", why)
	}
	return errors.Join(errs...)
}

func (c *Controller) markFailedAndDelete(ctx context.Context, pod *corev1.Pod, condition *corev1.PodCondition) error {
	if !isTerminated(pod) {
		status := map[string]any{"phase": corev1.PodFailed}
		if condition != nil {
			cond := *condition
			cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
			status["conditions"] = []corev1.PodCondition{cond}
		}
		patch, _ := json.Marshal(map[string]any{"status": status})
		if _, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return err
		}
	}
	zero := int64(0)
	return c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
}
