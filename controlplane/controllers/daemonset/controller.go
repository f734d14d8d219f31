// Package daemonset runs one pod of each DaemonSet on every node that
// should run it, as kube-controller-manager's DaemonSet controller does.
// A node should run the pod when it matches the template's node selector
// and required node affinity and the pod tolerates its NoSchedule and
// NoExecute taints (DaemonSet pods tolerate the node-lifecycle taints by
// default); the pod is pinned to its node by node affinity and placed by
// the scheduler. Each template is a ControllerRevision (the history
// `kubectl rollout history|undo` reads); a RollingUpdate replaces old
// pods at most maxUnavailable at a time, or first starts maxSurge new ones
// beside them; OnDelete waits for the user to delete them.
package daemonset

import (
	"context"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
	controllerName = "daemonset"
	// eventSource is the event source, as kube-controller-manager names it.
	eventSource = "daemonset-controller"
	workers     = 2
	// failedPodBackoff is how long a node waits after its pod failed
	// before the pod is made again.
	failedPodBackoff = 10 * time.Second
)

var dsKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

var everything = labels.Everything()

// Controller is the DaemonSet control loop; its queue holds DaemonSet
// keys.
type Controller struct {
	client       kubernetes.Interface
	daemonSets   appslisters.DaemonSetLister
	history      controllers.History
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	recorder     record.EventRecorder
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllers.Expectations
	owners       controllers.Owners[*appsv1.DaemonSet]
	now          func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the DaemonSet controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	apps, core := cc.Informers.Apps().V1(), cc.Informers.Core().V1()
	c := &Controller{
		client:       cc.Client,
		daemonSets:   apps.DaemonSets().Lister(),
		history:      controllers.History{Client: cc.Client, Revisions: apps.ControllerRevisions().Lister()},
		pods:         core.Pods().Lister(),
		nodes:        core.Nodes().Lister(),
		recorder:     cc.Recorder(eventSource),
		queue:        component.NewQueue(controllerName),
		expectations: controllers.NewExpectations(time.Now),
		now:          time.Now,
	}
	c.owners = controllers.Owners[*appsv1.DaemonSet]{
		Kind:     dsKind,
		Get:      func(ns, name string) (*appsv1.DaemonSet, error) { return c.daemonSets.DaemonSets(ns).Get(name) },
		List:     func(ns string) ([]*appsv1.DaemonSet, error) { return c.daemonSets.DaemonSets(ns).List(everything) },
		Selector: func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector },
		Wake:     func(ds *appsv1.DaemonSet) { c.queue.Add(keyOf(ds.Namespace, ds.Name)) },
	}
	enqueue := component.Enqueuer(c.queue)
	err := informer.AddHandlers(
		informer.Handler{Name: "daemonset", Informer: apps.DaemonSets().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) }, DeleteFunc: c.daemonSetDeleted}},
		informer.Handler{Name: "pod", Informer: core.Pods().Informer(),
			Funcs: controllers.OwnedPods[*appsv1.DaemonSet]{Owners: c.owners, Expectations: c.expectations}.Handlers()},
		informer.Handler{Name: "node", Informer: core.Nodes().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.wakeAll() }, UpdateFunc: c.nodeUpdated, DeleteFunc: func(any) { c.wakeAll() }}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs DaemonSets until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

// nodeUpdated wakes the DaemonSets when a node changes what decides
// whether their pods run there (its labels, taints, deletion), not on its
// status reports.
func (c *Controller) nodeUpdated(old, cur any) {
	o, n := old.(*corev1.Node), cur.(*corev1.Node)
	if !maps.Equal(o.Labels, n.Labels) || !apiequality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
		c.wakeAll()
	}
}

// wakeAll queues every DaemonSet: a node came, went or changed.
func (c *Controller) wakeAll() {
	all, err := c.daemonSets.List(everything)
	if err != nil {
		return
	}
	for _, ds := range all {
		c.queue.Add(keyOf(ds.Namespace, ds.Name))
	}
}

func (c *Controller) daemonSetDeleted(obj any) {
	if ds, ok := informer.FromTombstone[*appsv1.DaemonSet](obj); ok {
		key := keyOf(ds.Namespace, ds.Name)
		c.expectations.Forget(key)
		c.queue.Add(key)
	}
}
