// Package namespace empties deleted namespaces. When a Namespace has a
// deletionTimestamp and still holds the "kubernetes" finalizer, the
// controller deletes everything in it (pods first, then every other
// namespaced resource discovery lists), waits until lists come back empty,
// and then removes its finalizer through namespaces/finalize; the API server
// removes the namespace once no finalizer is left. Status conditions tell
// the user what the deletion waits for, as kube-controller-manager's do.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "namespace"
	workers        = 2
	// maxRetryDelay caps the backoff between looks at a namespace whose
	// content is still draining (kube-controller-manager caps it at 60s too).
	maxRetryDelay = 60 * time.Second
)

// Controller deletes the content of deleted namespaces. Its workers may run
// concurrently; the queue keeps one namespace on one worker at a time.
type Controller struct {
	namespaces typedcorev1.NamespaceInterface
	lister     corelisters.NamespaceLister
	// discover lists the namespaced resources the API server serves.
	discover func() ([]*metav1.APIResourceList, error)
	content  content
	queue    workqueue.TypedRateLimitingInterface[string]
	now      func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the namespace controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Informers, cc.Client.Discovery().ServerPreferredNamespacedResources, dynamicContent{cc.Dynamic})
}

func newController(client kubernetes.Interface, inf informers.SharedInformerFactory,
	discover func() ([]*metav1.APIResourceList, error), content content) (*Controller, error) {
	c := &Controller{
		namespaces: client.CoreV1().Namespaces(),
		lister:     inf.Core().V1().Namespaces().Lister(),
		discover:   discover,
		content:    content,
		queue:      component.NewQueue(controllerName, component.WithMaxWait(maxRetryDelay)),
		now:        time.Now,
	}
	err := informer.AddHandlers(
		informer.Handler{Name: "namespace", Informer: inf.Core().V1().Namespaces().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.namespaceChanged,
			UpdateFunc: func(_, obj any) { c.namespaceChanged(obj) },
		}},
		// A pod that finally goes may be the last thing a namespace waits
		// for: look again at once instead of at the next backoff.
		informer.Handler{Name: "pod", Informer: inf.Core().V1().Pods().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			DeleteFunc: c.podDeleted,
		}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run works on deleted namespaces until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) namespaceChanged(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if ok && ns.DeletionTimestamp != nil {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) podDeleted(obj any) {
	key, ok := component.KeyOf(obj)
	if !ok {
		return
	}
	nsName, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	if ns, err := c.lister.Get(nsName); err == nil && ns.DeletionTimestamp != nil {
		c.queue.Add(nsName)
	}
}

// sync takes one step in deleting namespace name: it deletes what is left
// in it and, once nothing is, finalizes it. It returns an error wrapping
// component.ErrWaiting while content remains.
func (c *Controller) sync(ctx context.Context, name string) error {
	// Read the namespace from the API server, not the cache: others edit
	// it during deletion and a stale copy would only conflict.
	ns, err := c.namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace: %w", err)
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	rep := c.deleteContent(ctx, name)
	ns, statusErr := c.updateStatus(ctx, ns, rep)
	switch err := rep.err(); {
	case err != nil:
		return errors.Join(err, statusErr)
	case rep.remainingCount() > 0:
		return fmt.Errorf("%d objects remain: %w", rep.remainingCount(), component.ErrWaiting)
	}
	// A status not written does not hold the deletion up: once finalized
	// the namespace is gone.
	return c.finalize(ctx, ns)
}

// updateStatus records rep in the namespace's conditions (and the
// Terminating phase) when they changed. It returns the namespace as last
// seen, and the update's error.
func (c *Controller) updateStatus(ctx context.Context, ns *corev1.Namespace, rep report) (*corev1.Namespace, error) {
	conds, changed := mergeConditions(ns.Status.Conditions, conditions(rep), metav1.NewTime(c.now()))
	if !changed && ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	upd := ns.DeepCopy()
	upd.Status.Phase = corev1.NamespaceTerminating
	upd.Status.Conditions = conds
	out, err := c.namespaces.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return ns, fmt.Errorf("update namespace status: %w", err)
	}
	return out, nil
}

// finalize removes the kubernetes finalizer from the namespace's spec,
// reading it again when someone else changed it meanwhile.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		upd := ns.DeepCopy()
		upd.Spec.Finalizers = slices.DeleteFunc(upd.Spec.Finalizers, func(f corev1.FinalizerName) bool {
			return f == corev1.FinalizerKubernetes
		})
		_, err := c.namespaces.Finalize(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			cur, getErr := c.namespaces.Get(ctx, ns.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			ns = cur
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize namespace: %w", err)
	}
	slog.Info("namespace emptied and finalized", "controller", controllerName, "name", ns.Name)
	return nil
}
