// Package replicaset keeps the pods a ReplicaSet selects at spec.replicas,
// as kube-controller-manager's ReplicaSet controller does: it adopts
// matching orphans, releases owned pods whose labels stop matching, creates
// missing pods from spec.template in slow-start batches, deletes surplus
// pods least valuable first, and reports the counts in status.
//
// Expectations make it wait until its informer has observed its own creates
// and deletes before it acts on a ReplicaSet again, so it never creates
// twice for one missing pod.
package replicaset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
)

const (
	// eventSource names the controller in events.
	eventSource = "replicaset-controller"
	// workers is how many ReplicaSets are synced at once
	// (kube-controller-manager's --concurrent-replicaset-syncs).
	workers = 5
)

// controllerKind is what the ownerReferences of a ReplicaSet's pods name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet control loop. Work is keyed "namespace/name";
// the workqueue never hands one key to two workers at once, so a
// ReplicaSet's sync is serialized while different ReplicaSets run in
// parallel.
type Controller struct {
	client       kubernetes.Interface
	recorder     record.EventRecorder
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *expectations
	now          func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the controller and registers its ReplicaSet and Pod informers
// on cc.Informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Informers, cc.Recorder(eventSource), time.Now)
}

func newController(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, now func() time.Time) (*Controller, error) {
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()
	c := &Controller{
		client:       client,
		recorder:     recorder,
		rsLister:     rsInformer.Lister(),
		podLister:    podInformer.Lister(),
		queue:        component.NewQueue("replicaset"),
		expectations: newExpectations(now),
		now:          now,
	}
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.replicaSetAdded,
		UpdateFunc: c.replicaSetUpdated,
		DeleteFunc: c.replicaSetDeleted,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs ReplicaSets with several workers until ctx ends, then waits for
// the workers to finish their current sync.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, "replicaset", c.queue, workers, c.sync)
}

// keyOf is the queue and expectations key of an object.
func keyOf(namespace, name string) string {
	return namespace + "/" + name
}
