package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/informer"
)

// OwnedPods is what the controllers that own pods directly (Jobs,
// DaemonSets) do with pod events: count the creations and deletions
// their expectations wait for, and wake the owners concerned (the pod's
// controller, or for an orphan those that might adopt it).
type OwnedPods[T metav1.Object] struct {
	Owners       Owners[T]
	Expectations *Expectations
	// Also, when set, sees every pod event as well.
	Also func(pod *corev1.Pod)
}

// Handlers are the pod informer's handlers.
func (o OwnedPods[T]) Handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: o.added, UpdateFunc: o.updated, DeleteFunc: o.deleted}
}

func ownerKey(owner metav1.Object) string { return owner.GetNamespace() + "/" + owner.GetName() }

func (o OwnedPods[T]) added(obj any) {
	pod := obj.(*corev1.Pod)
	if owner, ok := o.Owners.Of(pod); ok {
		o.Expectations.CreationObserved(ownerKey(owner))
	}
	o.also(pod)
	o.Owners.Added(pod)
}

func (o OwnedPods[T]) updated(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil && oldPod.DeletionTimestamp == nil {
		o.deletionObserved(curPod)
	}
	o.also(curPod)
	o.Owners.Updated(oldPod, curPod)
}

func (o OwnedPods[T]) deleted(obj any) {
	pod, ok := informer.FromTombstone[*corev1.Pod](obj)
	if !ok {
		return
	}
	if owner, ok := o.deletionObserved(pod); ok {
		o.Owners.Wake(owner)
	}
	o.also(pod)
}

func (o OwnedPods[T]) deletionObserved(pod *corev1.Pod) (T, bool) {
	owner, ok := o.Owners.Of(pod)
	if ok {
		o.Expectations.DeletionObserved(ownerKey(owner), pod.Namespace+"/"+pod.Name)
	}
	return owner, ok
}

func (o OwnedPods[T]) also(pod *corev1.Pod) {
	if o.Also != nil {
		o.Also(pod)
	}
}

// ClaimPods adopts and releases the pods of owner's namespace so that
// owner (of o.Owners.Kind, named noun in errors) controls exactly those
// selector matches, and returns copies of them; getLive reads the owner
// afresh before an adoption. A selector that does not parse selects
// nothing.
func ClaimPods[T metav1.Object](ctx context.Context, client kubernetes.Interface, pods corelisters.PodLister, owners Owners[T],
	owner T, selector *metav1.LabelSelector, noun string, getLive func(ctx context.Context) (metav1.Object, error)) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, nil
	}
	all, err := pods.Pods(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	owned, err := Claimer[*corev1.Pod]{
		Owner: owner, OwnerKind: owners.Kind, Selector: sel, OwnerNoun: noun, Noun: "pod", Get: getLive,
		Patch: func(ctx context.Context, pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
			return client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		},
	}.Claim(ctx, all)
	copies := make([]*corev1.Pod, len(owned))
	for i, p := range owned {
		copies[i] = p.DeepCopy()
	}
	return copies, err
}
