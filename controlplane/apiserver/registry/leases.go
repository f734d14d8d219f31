package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type leaseStrategy struct{ BaseStrategy }

func (leaseStrategy) Validate(obj runtime.Object) field.ErrorList {
	spec := obj.(*coordinationv1.Lease).Spec
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), *d, "must be greater than 0")}
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "leaseTransitions"), *t, "must be greater than or equal to 0")}
	}
	return nil
}

func (leaseStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Holder", "string", "The holder of the lease."), ageColumn}
}

func (leaseStrategy) Row(obj runtime.Object) []any {
	l := obj.(*coordinationv1.Lease)
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []any{l.Name, holder, age(l.CreationTimestamp)}
}
