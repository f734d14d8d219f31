package controllers

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ActiveNamespace says whether the namespace exists and is active (not
// being deleted), as the lister's cache has it: controllers that give
// every namespace something leave the others alone.
func ActiveNamespace(namespaces corelisters.NamespaceLister, name string) (bool, error) {
	ns, err := namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ns.Status.Phase == corev1.NamespaceActive && ns.DeletionTimestamp == nil, nil
}
