// Package statefulset runs StatefulSets as kube-controller-manager's
// StatefulSet controller does. Each pod has a stable identity: the name
// <set>-<ordinal>, a hostname under the set's headless Service, and its
// own claims made from the volumeClaimTemplates, which outlive it. With
// the OrderedReady policy pods are made one at a time in ordinal order,
// each once its predecessors are running and available, and removed in
// reverse order; Parallel makes and removes them all at once. Each
// template is a ControllerRevision; a RollingUpdate replaces the pods
// from the highest ordinal down to the partition, at most maxUnavailable
// at a time; OnDelete waits for the user to delete them.
package statefulset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "statefulset"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "statefulset-controller"
	workers     = 2
)

var setKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

var everything = labels.Everything()

// Controller is the StatefulSet control loop; its queue holds StatefulSet
// keys.
type Controller struct {
	client       kubernetes.Interface
	sets         appslisters.StatefulSetLister
	pods         corelisters.PodLister
	claims       corelisters.PersistentVolumeClaimLister
	history      controllers.History
	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllers.Expectations
	owners       controllers.Owners[*appsv1.StatefulSet]
	now          func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the StatefulSet controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	apps, core := cc.Informers.Apps().V1(), cc.Informers.Core().V1()
	c := &Controller{
		client:       cc.Client,
		sets:         apps.StatefulSets().Lister(),
		pods:         core.Pods().Lister(),
		claims:       core.PersistentVolumeClaims().Lister(),
		history:      controllers.History{Client: cc.Client, Revisions: apps.ControllerRevisions().Lister()},
		recorder:     cc.Recorder(eventSource),
		queue:        component.NewQueue(controllerName),
		expectations: controllers.NewExpectations(time.Now),
		now:          time.Now,
	}
	c.owners = controllers.Owners[*appsv1.StatefulSet]{
		Kind:     setKind,
		Get:      func(ns, name string) (*appsv1.StatefulSet, error) { return c.sets.StatefulSets(ns).Get(name) },
		List:     func(ns string) ([]*appsv1.StatefulSet, error) { return c.sets.StatefulSets(ns).List(everything) },
		Selector: func(ss *appsv1.StatefulSet) *metav1.LabelSelector { return ss.Spec.Selector },
		Wake:     func(ss *appsv1.StatefulSet) { c.queue.Add(keyOf(ss.Namespace, ss.Name)) },
	}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "statefulset", Informer: apps.StatefulSets().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: c.setDeleted}},
		informer.Handler{Name: "pod", Informer: core.Pods().Informer(),
			Funcs: controllers.OwnedPods[*appsv1.StatefulSet]{Owners: c.owners, Expectations: c.expectations}.Handlers()},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs StatefulSets until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

func (c *Controller) setDeleted(obj any) {
	if ss, ok := informer.FromTombstone[*appsv1.StatefulSet](obj); ok {
		key := keyOf(ss.Namespace, ss.Name)
		c.expectations.Forget(key)
		c.queue.Add(key)
	}
}
