package registry

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Priorities, as Kubernetes defines them: users' classes reach at most
// highestUserPriority; the two system classes sit above.
const (
	highestUserPriority = 1_000_000_000
	systemClassPrefix   = "system-"
)

// SystemPriorityClasses are the classes every cluster has, made at
// bootstrap and never deleted.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	class := func(name string, value int32, description string) *schedulingv1.PriorityClass {
		policy := corev1.PreemptLowerPriority
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
			Description: description, PreemptionPolicy: &policy}
	}
	return []*schedulingv1.PriorityClass{
		class("system-node-critical", 2_000_001_000, "Used for system critical pods that must not be moved from their current node."),
		class("system-cluster-critical", 2_000_000_000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

// priorityClassStrategy serves scheduling.k8s.io/v1 PriorityClasses.
type priorityClassStrategy struct{ BaseStrategy }

func (priorityClassStrategy) PrepareForCreate(obj runtime.Object) {
	pc := obj.(*schedulingv1.PriorityClass)
	if pc.PreemptionPolicy == nil {
		policy := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &policy
	}
}

func (s priorityClassStrategy) PrepareForUpdate(obj, _ runtime.Object) { s.PrepareForCreate(obj) }

func (priorityClassStrategy) Validate(obj runtime.Object) field.ErrorList {
	pc := obj.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemClassPrefix) {
		if err := knownSystemClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > highestUserPriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %d", highestUserPriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

// knownSystemClass says why pc is not one of the system classes, if so.
func knownSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name == pc.Name {
			if sys.Value != pc.Value || pc.GlobalDefault {
				return fmt.Errorf("value of %v PriorityClass must be %v", pc.Name, sys.Value)
			}
			return nil
		}
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}

func (priorityClassStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pc, prev := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if pc.Value != prev.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	if pc.PreemptionPolicy != nil && prev.PreemptionPolicy != nil && *pc.PreemptionPolicy != *prev.PreemptionPolicy {
		errs = append(errs, field.Forbidden(field.NewPath("preemptionPolicy"), "may not be changed in an update."))
	}
	return errs
}

func (priorityClassStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		column("Value", "integer", "Value is the integer value of this priority class."),
		column("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority."),
		ageColumn,
		column("PreemptionPolicy", "string", "PreemptionPolicy is the Policy for preempting pods with lower priority."),
	}
}

func (priorityClassStrategy) Row(obj runtime.Object) []any {
	pc := obj.(*schedulingv1.PriorityClass)
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(pc.CreationTimestamp), policy}
}

// CheckDelete keeps the system classes.
func (priorityClassStrategy) CheckDelete(obj runtime.Object) error {
	name := ObjectMeta(obj).Name
	for _, sys := range SystemPriorityClasses() {
		if sys.Name == name {
			return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name, errors.New("this is a system priority class and cannot be deleted"))
		}
	}
	return nil
}
