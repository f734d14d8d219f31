// Package deployment rolls Deployments out through ReplicaSets, as
// kube-controller-manager's deployment controller does. For each
// Deployment it owns the ReplicaSets its selector matches (adopting
// orphans, releasing those that stop matching), keeps one ReplicaSet per
// pod template — named "<deployment>-<pod-template-hash>" and numbered by
// the deployment.kubernetes.io/revision annotation — and moves pods from
// the old ReplicaSets to the new one with the Deployment's strategy:
// RollingUpdate within maxSurge and maxUnavailable, or Recreate. Pods are
// created and deleted by the ReplicaSet controller; this one only sets
// ReplicaSet sizes, and reports progress in the Deployment's status.
//
// Each sync decides with pure functions (new sizes, conditions, which old
// ReplicaSets to delete) over the informer caches and then writes. Writes
// carry the resourceVersion that was read, so a decision taken on a stale
// cache fails with a conflict and is retried.
package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
)

const (
	// eventSource names the controller in events.
	eventSource = "deployment-controller"
	// workers is how many Deployments are synced at once
	// (kube-controller-manager's --concurrent-deployment-syncs).
	workers = 5
)

// controllerKind is what the ownerReferences of a Deployment's ReplicaSets name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the Deployment control loop. Work is keyed
// "namespace/name"; the workqueue never hands one key to two workers at
// once, so one Deployment is synced by one worker at a time.
type Controller struct {
	client    kubernetes.Interface
	recorder  record.EventRecorder
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	queue     workqueue.TypedRateLimitingInterface[string]
	owners    controllers.Owners[*appsv1.Deployment] // of ReplicaSets
	now       func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the controller and registers its Deployment, ReplicaSet and
// Pod informers on cc.Informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Informers, cc.Recorder(eventSource), time.Now)
}

func newController(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, now func() time.Time) (*Controller, error) {
	dInformer := factory.Apps().V1().Deployments()
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()
	c := &Controller{
		client:    client,
		recorder:  recorder,
		dLister:   dInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		queue:     component.NewQueue("deployment"),
		now:       now,
	}
	c.owners = c.replicaSetOwners()
	if err := c.addHandlers(dInformer.Informer(), rsInformer.Informer(), podInformer.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs Deployments with several workers until ctx ends, then waits
// for the workers to finish their current sync.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, "deployment", c.queue, workers, c.sync)
}
