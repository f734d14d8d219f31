package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// protectedNamespaces may not be deleted.
var protectedNamespaces = map[string]bool{metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true}

type namespaceStrategy struct{ BaseStrategy }

func (namespaceStrategy) PrepareForCreate(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if len(ns.Spec.Finalizers) == 0 {
		ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	}
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func (namespaceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec = oldNs.Spec
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// Held reports that the namespace waits for its content to be removed
// before it goes: its spec finalizers are still there.
func (namespaceStrategy) Held(obj runtime.Object) bool {
	return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0
}

// MarkTerminating records that deletion has begun.
func (namespaceStrategy) MarkTerminating(obj runtime.Object) {
	obj.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating
}

// CheckDelete refuses to delete the namespaces the cluster itself needs.
func (namespaceStrategy) CheckDelete(obj runtime.Object) error {
	name := ObjectMeta(obj).Name
	if protectedNamespaces[name] {
		return apierrors.NewForbidden(corev1.Resource("namespaces"), name, fmt.Errorf("this namespace may not be deleted"))
	}
	return nil
}

func (namespaceStrategy) Validate(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	for i, f := range obj.(*corev1.Namespace).Spec.Finalizers {
		if f == "" {
			errs = append(errs, field.Required(field.NewPath("spec", "finalizers").Index(i), ""))
		}
	}
	return errs
}

func (namespaceStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
}

func (namespaceStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Status", "string", "The status of the namespace."), ageColumn}
}

func (namespaceStrategy) Row(obj runtime.Object) []any {
	ns := obj.(*corev1.Namespace)
	return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp)}
}
