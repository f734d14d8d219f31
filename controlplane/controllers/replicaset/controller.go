// Package replicaset keeps the pods a ReplicaSet selects at spec.replicas,
// as kube-controller-manager's ReplicaSet controller does: it adopts
// matching orphans, releases owned pods whose labels stop matching, creates
// missing pods from spec.template in slow-start batches, deletes surplus
// pods least valuable first, and reports the counts in status.
//
// The same controller manages core/v1 ReplicationControllers, which it
// sees as ReplicaSets (rc.go), as kube-controller-manager's replication
// controller does: one mechanism for both kinds.
//
// Expectations make it wait until its informer has observed its own creates
// and deletes before it acts on a ReplicaSet again, so it never creates
// twice for one missing pod.
package replicaset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

// workers is how many objects of a kind are synced at once
// (kube-controller-manager's --concurrent-replicaset-syncs and
// --concurrent-rc-syncs).
const workers = 5

// replicaSets is the controller's view of the objects of one kind, as
// ReplicaSets: reads from the informer's cache, and the two API calls it
// makes on them.
type replicaSets interface {
	// Get reads one from the cache.
	Get(namespace, name string) (*appsv1.ReplicaSet, error)
	// List reads a namespace's from the cache.
	List(namespace string) ([]*appsv1.ReplicaSet, error)
	// GetLive reads one from the API server (to recheck before adopting).
	GetLive(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// UpdateStatus writes rs's status through the status subresource.
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
}

// kind is what differs between the kinds the controller manages.
type kind struct {
	gvk         schema.GroupVersionKind // what pods' ownerReferences name
	name        string                  // the queue's and the logs' name
	eventSource string                  // who the events come from
	informer    cache.SharedIndexInformer
	objects     replicaSets
}

// Controller is the control loop of one kind. Work is keyed
// "namespace/name"; the workqueue never hands one key to two workers at
// once, so an object's sync is serialized while different objects run in
// parallel.
type Controller struct {
	kind
	client       kubernetes.Interface
	recorder     record.EventRecorder
	podLister    corelisters.PodLister
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllers.Expectations
	owners       controllers.Owners[*appsv1.ReplicaSet] // of pods
	now          func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the ReplicaSet controller and registers its ReplicaSet and
// Pod informers on cc.Informers.
func New(cc component.Context) (component.Component, error) {
	k := replicaSetKind(cc.Client, cc.Informers)
	return newController(k, cc.Client, cc.Informers, cc.Recorder(k.eventSource), time.Now)
}

// NewReplicationControllers builds the ReplicationController controller
// and registers its ReplicationController and Pod informers.
func NewReplicationControllers(cc component.Context) (component.Component, error) {
	k := replicationControllerKind(cc.Client, cc.Informers)
	return newController(k, cc.Client, cc.Informers, cc.Recorder(k.eventSource), time.Now)
}

func newController(k kind, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, now func() time.Time) (*Controller, error) {
	podInformer := factory.Core().V1().Pods()
	c := &Controller{
		kind:         k,
		client:       client,
		recorder:     recorder,
		podLister:    podInformer.Lister(),
		queue:        component.NewQueue(k.name),
		expectations: controllers.NewExpectations(now),
		now:          now,
	}
	c.owners = c.podOwners()
	err := informer.AddHandlers(
		informer.Handler{Name: k.name, Informer: k.informer, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.ownerAdded,
			UpdateFunc: c.ownerUpdated,
			DeleteFunc: c.ownerDeleted,
		}},
		informer.Handler{Name: "pod", Informer: podInformer.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.podAdded,
			UpdateFunc: c.podUpdated,
			DeleteFunc: c.podDeleted,
		}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs with several workers until ctx ends, then waits for the
// workers to finish their current sync.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, c.name, c.queue, workers, c.sync)
}

// keyOf is the queue and expectations key of an object.
func keyOf(namespace, name string) string {
	return namespace + "/" + name
}
