// Package volumeprotection lifts the protection finalizers the API puts
// on every claim and volume, as kube-controller-manager's pvc-protection
// and pv-protection controllers do: a deleted claim goes once no
// scheduled pod that has not ended uses it, a deleted volume once no
// claim is bound to it.
package volumeprotection

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
	"github.com/skiff-lab/skiff/podrefs"
)

const (
	workers = 1
	// The finalizers the API server's admission puts on claims and volumes.
	pvcFinalizer = "kubernetes.io/pvc-protection"
	pvFinalizer  = "kubernetes.io/pv-protection"
)

// Claims lifts claims' protection; its queue holds claim keys.
type Claims struct {
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	pods   corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
}

// NewClaims builds the pvc-protection controller on cc's informers.
func NewClaims(cc component.Context) (component.Component, error) {
	core := cc.Informers.Core().V1()
	c := &Claims{client: cc.Client, claims: core.PersistentVolumeClaims().Lister(), pods: core.Pods().Lister(),
		queue: component.NewQueue("pvc-protection")}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "persistentvolumeclaim", Informer: core.PersistentVolumeClaims().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }}},
		informer.Handler{Name: "pod", Informer: core.Pods().Informer(), Funcs: informer.OnChange(c.podChanged)},
	)
	return c, err
}

// Run lifts claims' protection until ctx ends.
func (c *Claims) Run(ctx context.Context) {
	component.RunWorkers(ctx, "pvc-protection", c.queue, workers, c.sync)
}

// podChanged queues the claims of a pod that may have stopped using them.
func (c *Claims) podChanged(obj any) {
	pod, ok := informer.FromTombstone[*corev1.Pod](obj)
	if !ok {
		return
	}
	for _, name := range podrefs.Claims(pod) {
		c.queue.Add(pod.Namespace + "/" + name)
	}
}

func (c *Claims) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || pvc.DeletionTimestamp == nil || !slices.Contains(pvc.Finalizers, pvcFinalizer) {
		return err
	}
	used, err := c.inUse(ctx, pvc)
	if err != nil || used {
		return err
	}
	next := pvc.DeepCopy()
	next.Finalizers = without(pvc.Finalizers, pvcFinalizer)
	_, err = c.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, next, metav1.UpdateOptions{})
	return lifted(err, pvcFinalizer)
}

// inUse reports whether a scheduled pod that has not ended uses the
// claim. The cache may not show a pod just made: a live list decides
// when the cache shows none.
func (c *Claims) inUse(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	cached, err := c.pods.Pods(pvc.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(cached, func(p *corev1.Pod) bool { return uses(p, pvc.Name) }) {
		return true, nil
	}
	live, err := c.client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(live.Items, func(p corev1.Pod) bool { return uses(&p, pvc.Name) }), nil
}

func uses(pod *corev1.Pod, claim string) bool {
	ended := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	return pod.Spec.NodeName != "" && !ended && slices.Contains(podrefs.Claims(pod), claim)
}

// Volumes lifts volumes' protection; its queue holds volume names.
type Volumes struct {
	client  kubernetes.Interface
	volumes corelisters.PersistentVolumeLister
	queue   workqueue.TypedRateLimitingInterface[string]
}

// NewVolumes builds the pv-protection controller on cc's informers.
func NewVolumes(cc component.Context) (component.Component, error) {
	pvs := cc.Informers.Core().V1().PersistentVolumes()
	c := &Volumes{client: cc.Client, volumes: pvs.Lister(), queue: component.NewQueue("pv-protection")}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(informer.Handler{Name: "persistentvolume", Informer: pvs.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }}})
	return c, err
}

// Run lifts volumes' protection until ctx ends.
func (c *Volumes) Run(ctx context.Context) {
	component.RunWorkers(ctx, "pv-protection", c.queue, workers, c.sync)
}

func (c *Volumes) sync(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || pv.DeletionTimestamp == nil || !slices.Contains(pv.Finalizers, pvFinalizer) ||
		pv.Status.Phase == corev1.VolumeBound {
		return err
	}
	next := pv.DeepCopy()
	next.Finalizers = without(pv.Finalizers, pvFinalizer)
	_, err = c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{})
	return lifted(err, pvFinalizer)
}

func without(finalizers []string, f string) []string {
	return slices.DeleteFunc(slices.Clone(finalizers), func(x string) bool { return x == f })
}

// lifted is the outcome of an update that lifted finalizer: an object
// gone meanwhile is no error; a conflict (the cache was behind) is
// retried on the newer object.
func lifted(err error, finalizer string) error {
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("lift %s: %w", finalizer, err)
	}
	return nil
}
