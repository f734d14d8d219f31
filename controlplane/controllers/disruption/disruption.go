// Package disruption keeps every PodDisruptionBudget's status as
// kube-controller-manager's disruption controller does: how many pods the
// budget expects (its pods' controllers' replicas, or its pods), how many
// must be healthy, how many are, and so how many may be disrupted now.
// The pods/eviction subresource spends that allowance and lists the pods
// it evicted in status.disruptedPods; the controller keeps them out of the
// healthy count until they go, or until disruptionbudget.DeletionTimeout
// has passed without them going.
package disruption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/disruptionbudget"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "disruption"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "controllermanager"
	workers     = 2
)

// Controller writes the status of PodDisruptionBudgets. Its queue holds
// budget keys (namespace/name).
type Controller struct {
	client   kubernetes.Interface
	budgets  policylisters.PodDisruptionBudgetLister
	pods     corelisters.PodLister
	scales   scales
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
	enqueue  func(obj any)
	now      func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the disruption controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	inf := cc.Informers
	apps := inf.Apps().V1()
	c := &Controller{
		client:   cc.Client,
		budgets:  inf.Policy().V1().PodDisruptionBudgets().Lister(),
		pods:     inf.Core().V1().Pods().Lister(),
		scales:   scales{rcs: inf.Core().V1().ReplicationControllers().Lister(), rss: apps.ReplicaSets().Lister(), deployments: apps.Deployments().Lister()},
		recorder: cc.Recorder(eventSource),
		queue:    component.NewQueue(controllerName),
		now:      time.Now,
	}
	c.enqueue = component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "poddisruptionbudget", Informer: inf.Policy().V1().PodDisruptionBudgets().Informer(), Funcs: informer.OnChange(c.enqueue)},
		informer.Handler{Name: "pod", Informer: inf.Core().V1().Pods().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.podChanged, UpdateFunc: c.podUpdated, DeleteFunc: c.podChanged}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run writes budgets' status until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) podUpdated(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	c.podChanged(cur)
	if !maps.Equal(oldPod.Labels, curPod.Labels) {
		c.podChanged(old)
	}
}

// podChanged queues the budgets that select the pod.
func (c *Controller) podChanged(obj any) {
	pod, ok := informer.FromTombstone[*corev1.Pod](obj)
	if !ok {
		return
	}
	budgets, err := c.budgets.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range budgets {
		if disruptionbudget.Selects(pdb, pod) {
			c.enqueue(pdb)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pdb, err := c.budgets.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := c.pods.Pods(ns).List(disruptionbudget.Selector(pdb))
	if err != nil {
		return err
	}
	status, recheck, err := c.status(pdb, pods)
	if err != nil {
		c.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		status = failedStatus(pdb, err)
	}
	if err := c.writeStatus(ctx, pdb, status); err != nil {
		return err
	}
	if !recheck.IsZero() {
		c.queue.AddAfter(key, recheck.Sub(c.now()))
	}
	return nil
}

// status is pdb's status for pods; recheck (when not zero) is when an
// eviction recorded in disruptedPods expires.
func (c *Controller) status(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (policyv1.PodDisruptionBudgetStatus, time.Time, error) {
	expected, desired, err := c.expectedAndDesired(pdb, pods)
	if err != nil {
		return policyv1.PodDisruptionBudgetStatus{}, time.Time{}, err
	}
	disrupted, recheck := c.disrupted(pdb, pods)
	healthy := int32(0)
	for _, pod := range pods {
		if _, gone := disrupted[pod.Name]; pod.DeletionTimestamp == nil && !gone && disruptionbudget.Ready(pod) {
			healthy++
		}
	}
	allowed := healthy - desired
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	next := &policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation,
		DisruptedPods: disrupted, DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected,
		Conditions: slices.Clone(pdb.Status.Conditions)}}
	disruptionbudget.SetAllowedCondition(next)
	return next.Status, recheck, nil
}

// expectedAndDesired is how many pods pdb expects and how many of them
// must be healthy. A percentage, and maxUnavailable, count from the
// replicas of the pods' controllers; a number of minAvailable from the
// pods.
func (c *Controller) expectedAndDesired(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, err error) {
	spec := &pdb.Spec
	switch {
	case spec.MaxUnavailable != nil:
		if expected, err = c.scales.expected(pods); err != nil {
			return 0, 0, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(0, expected-int32(maxUnavailable)), nil
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), spec.MinAvailable.IntVal, nil
	case spec.MinAvailable != nil:
		if expected, err = c.scales.expected(pods); err != nil {
			return 0, 0, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, int32(minAvailable), nil
	}
	return int32(len(pods)), 0, nil
}

// disrupted keeps the evictions of pdb.status.disruptedPods whose pods
// are still there and not yet deleted, until they expire; recheck is the
// earliest expiry of those kept.
func (c *Controller) disrupted(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (map[string]metav1.Time, time.Time) {
	var recheck time.Time
	kept := map[string]metav1.Time{}
	now := c.now()
	for _, pod := range pods {
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		expires := at.Add(disruptionbudget.DeletionTimeout)
		if expires.Before(now) {
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
			continue
		}
		kept[pod.Name] = at
		if recheck.IsZero() || expires.Before(recheck) {
			recheck = expires
		}
	}
	if len(kept) == 0 {
		return nil, recheck
	}
	return kept, recheck
}

// failedStatus allows no disruption and says why.
func failedStatus(pdb *policyv1.PodDisruptionBudget, err error) policyv1.PodDisruptionBudgetStatus {
	st := *pdb.Status.DeepCopy()
	st.DisruptionsAllowed, st.ObservedGeneration = 0, pdb.Generation
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.SyncFailedReason, Message: err.Error(), ObservedGeneration: pdb.Generation})
	return st
}

// writeStatus writes st when it differs from pdb's.
func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, st policyv1.PodDisruptionBudgetStatus) error {
	if apiequality.Semantic.DeepEqual(st, pdb.Status) {
		return nil
	}
	next := pdb.DeepCopy()
	next.Status = st
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	return nil
}
