package admit

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// RuntimeClasses finds runtime classes.
type RuntimeClasses interface {
	RuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, error)
}

// RuntimeClass applies the RuntimeClass a new pod names, as kube-apiserver's
// plugin of that name: a class that does not exist is refused; the class's
// overhead becomes the pod's (a pod that sets another is refused); its
// scheduling node selector is merged into the pod's (a conflicting value
// is refused) and its tolerations added.
type RuntimeClass struct {
	*admission.Handler
	classes RuntimeClasses
}

// NewRuntimeClass returns the plugin.
func NewRuntimeClass(classes RuntimeClasses) *RuntimeClass {
	return &RuntimeClass{Handler: admission.NewHandler(admission.Create), classes: classes}
}

// Admit applies the pod's runtime class.
func (p *RuntimeClass) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := newPod(a)
	if !ok || a.GetOperation() != admission.Create {
		return nil
	}
	var rc *nodev1.RuntimeClass
	if name := pod.Spec.RuntimeClassName; name != nil && *name != "" {
		var err error
		rc, err = p.classes.RuntimeClass(ctx, *name)
		if apierrors.IsNotFound(err) {
			return admission.NewForbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", *name))
		}
		if err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	if err := applyOverhead(pod, rc); err != nil {
		return admission.NewForbidden(a, err)
	}
	if rc == nil || rc.Scheduling == nil {
		return nil
	}
	if err := mergeNodeSelector(pod, rc.Scheduling.NodeSelector); err != nil {
		return admission.NewForbidden(a, err)
	}
	for _, t := range rc.Scheduling.Tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
		}
	}
	return nil
}

// applyOverhead sets the pod's overhead to its class's (rc nil: none).
func applyOverhead(pod *v1.Pod, rc *nodev1.RuntimeClass) error {
	switch {
	case rc == nil || rc.Overhead == nil:
		if pod.Spec.Overhead != nil {
			return fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
		}
	case pod.Spec.Overhead != nil && !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rc.Overhead.PodFixed):
		return fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
	default:
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	return nil
}

func mergeNodeSelector(pod *v1.Pod, sel map[string]string) error {
	for k, v := range sel {
		if have, ok := pod.Spec.NodeSelector[k]; ok && have != v {
			return fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, have)
		}
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[k] = v
	}
	return nil
}

func hasToleration(ts []v1.Toleration, t v1.Toleration) bool {
	for _, have := range ts {
		if apiequality.Semantic.DeepEqual(have, t) {
			return true
		}
	}
	return false
}
