package admit

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

var priorityClassesResource = schedulingv1.Resource("priorityclasses")

// PriorityClasses finds priority classes.
type PriorityClasses interface {
	PriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)
	PriorityClasses() ([]*schedulingv1.PriorityClass, error)
}

// Priority resolves a new pod's priorityClassName, as kube-apiserver's
// plugin of that name: the class's value becomes spec.priority and its
// preemptionPolicy the pod's; a pod naming no class gets the global
// default's (or priority 0); a class that does not exist, or a priority
// or policy the pod sets that differs from its class's, is refused. Only
// one class may be the global default.
type Priority struct {
	*admission.Handler
	classes PriorityClasses
}

// NewPriority returns the plugin.
func NewPriority(classes PriorityClasses) *Priority {
	return &Priority{Handler: admission.NewHandler(admission.Create, admission.Update), classes: classes}
}

// Admit sets a new pod's priority.
func (p *Priority) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := newPod(a)
	if !ok || a.GetOperation() != admission.Create {
		return nil
	}
	class, err := p.classFor(ctx, pod)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	var value int32
	policy := v1.PreemptLowerPriority
	if class != nil {
		pod.Spec.PriorityClassName, value = class.Name, class.Value
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy))
	}
	pod.Spec.Priority, pod.Spec.PreemptionPolicy = &value, &policy
	return nil
}

// classFor is the class the pod names, or the global default (nil: none).
func (p *Priority) classFor(ctx context.Context, pod *v1.Pod) (*schedulingv1.PriorityClass, error) {
	if name := pod.Spec.PriorityClassName; name != "" {
		class, err := p.classes.PriorityClass(ctx, name)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no PriorityClass with name %v was found", name)
		}
		return class, err
	}
	all, err := p.classes.PriorityClasses()
	if err != nil {
		return nil, err
	}
	var chosen *schedulingv1.PriorityClass
	for _, c := range all {
		if c.GlobalDefault && (chosen == nil || c.Value < chosen.Value) {
			chosen = c
		}
	}
	return chosen, nil
}

// Validate keeps the global default unique.
func (p *Priority) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pc, ok := a.GetObject().(*schedulingv1.PriorityClass)
	if !ok || a.GetResource().GroupResource() != priorityClassesResource || !pc.GlobalDefault {
		return nil
	}
	all, err := p.classes.PriorityClasses()
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	for _, c := range all {
		if c.GlobalDefault && c.Name != pc.Name {
			return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", c.Name))
		}
	}
	return nil
}
