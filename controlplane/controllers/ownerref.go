// Package controllers holds the control loops that keep the cluster as
// declared, one package each below this one (replicaset, deployment,
// endpoints, nodelifecycle, namespace, podgc, garbagecollector,
// serviceaccount), run by controlplane/component. This package has what
// the owning controllers share: the ownership rules for claiming,
// adopting and releasing objects, and resolving controller references.
package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResolveControllerRef returns the cached controller ref points to, read
// with get by name from ref's namespace, or the zero T when ref names
// another kind than kind, or an object since replaced.
func ResolveControllerRef[T metav1.Object](ref *metav1.OwnerReference, kind schema.GroupVersionKind, get func(name string) (T, error)) T {
	var zero T
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != kind.Group || ref.Kind != kind.Kind {
		return zero
	}
	obj, err := get(ref.Name)
	if err != nil || obj.GetUID() != ref.UID {
		return zero
	}
	return obj
}
