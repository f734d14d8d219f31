// Package controllers holds the control loops that keep the cluster as
// declared, one package each below this one (replicaset, deployment,
// endpoints, nodelifecycle, namespace, podgc, garbagecollector,
// serviceaccount), run by controlplane/component. This package has what
// the owning controllers share: the ownership rules for claiming,
// adopting and releasing objects, and the routing of owned objects'
// events to their controllers.
package controllers

import (
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Owners routes the informer events of owned objects (pods, ReplicaSets)
// to the controllers of kind Kind (ReplicaSets, Deployments) they belong
// to or, for orphans, to those whose selector might adopt them: the
// routing kube-controller-manager's ReplicaSet and Deployment controllers
// share.
type Owners[T metav1.Object] struct {
	Kind schema.GroupVersionKind
	// Get reads a controller from the cache.
	Get func(namespace, name string) (T, error)
	// List reads a namespace's controllers from the cache.
	List func(namespace string) ([]T, error)
	// Selector is a controller's pod or ReplicaSet selector.
	Selector func(T) *metav1.LabelSelector
	// Wake enqueues a controller.
	Wake func(T)
}

// Of returns obj's controller from the cache; false when obj has none, or
// its controller reference names another kind or an object since replaced.
func (o Owners[T]) Of(obj metav1.Object) (T, bool) {
	return o.resolve(obj.GetNamespace(), metav1.GetControllerOfNoCopy(obj))
}

// resolve returns the cached controller ref points to: one of Kind's
// group (any version), by name from namespace, with ref's UID.
func (o Owners[T]) resolve(namespace string, ref *metav1.OwnerReference) (T, bool) {
	var zero T
	if ref == nil {
		return zero, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != o.Kind.Group || ref.Kind != o.Kind.Kind {
		return zero, false
	}
	owner, err := o.Get(namespace, ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return zero, false
	}
	return owner, true
}

// Added wakes obj's controller or, for an orphan, those that might adopt it.
func (o Owners[T]) Added(obj metav1.Object) {
	if metav1.GetControllerOfNoCopy(obj) == nil {
		o.wakeAdopters(obj)
		return
	}
	o.WakeController(obj)
}

// Updated wakes the controllers an object belongs to before and after a
// change or, when it is an orphan whose labels or controller changed,
// those that might adopt it.
func (o Owners[T]) Updated(old, cur metav1.Object) {
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !reflect.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		o.wake(old.GetNamespace(), oldRef)
	}
	if curRef != nil {
		o.wake(cur.GetNamespace(), curRef)
		return
	}
	if refChanged || !maps.Equal(old.GetLabels(), cur.GetLabels()) {
		o.wakeAdopters(cur)
	}
}

// WakeController wakes obj's controller, if it has one: on a deletion,
// for orphans concern no one when they go.
func (o Owners[T]) WakeController(obj metav1.Object) {
	o.wake(obj.GetNamespace(), metav1.GetControllerOfNoCopy(obj))
}

func (o Owners[T]) wake(namespace string, ref *metav1.OwnerReference) {
	if owner, ok := o.resolve(namespace, ref); ok {
		o.Wake(owner)
	}
}

// wakeAdopters wakes every controller whose selector matches an orphan's
// labels. An empty selector adopts nothing.
func (o Owners[T]) wakeAdopters(orphan metav1.Object) {
	if len(orphan.GetLabels()) == 0 {
		return
	}
	all, err := o.List(orphan.GetNamespace())
	if err != nil {
		return
	}
	for _, owner := range all {
		selector, err := metav1.LabelSelectorAsSelector(o.Selector(owner))
		if err == nil && !selector.Empty() && selector.Matches(labels.Set(orphan.GetLabels())) {
			o.Wake(owner)
		}
	}
}
