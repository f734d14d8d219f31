package registry

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Ephemeral containers are added to a running pod, for debugging, through
// its ephemeralcontainers subresource only: never on create, never
// through an update of the pod, never changed or removed once added.

// ephemeralAsContainer is an ephemeral container as the container it runs
// as (the two types have the same fields).
func ephemeralAsContainer(ec *corev1.EphemeralContainer) corev1.Container {
	return corev1.Container(ec.EphemeralContainerCommon)
}

// PrepareSubresourceUpdate: through pods/ephemeralcontainers, only the
// spec's ephemeral containers change; through pods/resize, only the
// containers' resources.
func (PodStrategy) PrepareSubresourceUpdate(sub string, obj, old runtime.Object) {
	pod, prev := obj.(*corev1.Pod), old.(*corev1.Pod)
	switch sub {
	case "resize":
		prepareResize(pod, prev)
		return
	case "ephemeralcontainers":
	default:
		return
	}
	ecs := pod.Spec.EphemeralContainers
	pod.Spec = *prev.Spec.DeepCopy()
	pod.Spec.EphemeralContainers = ecs
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		defaultContainer((*corev1.Container)(&c.EphemeralContainerCommon))
	}
}

func (st PodStrategy) ValidateSubresourceUpdate(sub string, obj, old runtime.Object) field.ErrorList {
	switch sub {
	case "resize":
		return validateResize(obj.(*corev1.Pod), old.(*corev1.Pod))
	case "ephemeralcontainers":
	default:
		return st.ValidateUpdate(obj, old)
	}
	spec, prev := &obj.(*corev1.Pod).Spec, &old.(*corev1.Pod).Spec
	path := field.NewPath("spec", "ephemeralContainers")
	var errs field.ErrorList
	for i, o := range prev.EphemeralContainers {
		if i >= len(spec.EphemeralContainers) || !apiequality.Semantic.DeepEqual(spec.EphemeralContainers[i], o) {
			errs = append(errs, field.Forbidden(path.Index(i), "existing ephemeral containers may not be changed or removed"))
		}
	}
	return errs
}

// validateEphemeralContainers checks a pod's ephemeral containers: named
// apart from every other container, and with none of what only regular
// containers have (ports, probes, lifecycle, resources).
func validateEphemeralContainers(spec *corev1.PodSpec, path *field.Path, volumes sets.Set[string]) field.ErrorList {
	names := sets.New[string]()
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			names.Insert(c.Name)
		}
	}
	cs := make([]corev1.Container, len(spec.EphemeralContainers))
	for i := range spec.EphemeralContainers {
		cs[i] = ephemeralAsContainer(&spec.EphemeralContainers[i])
	}
	errs := validateContainers(cs, path, names, volumes)
	for i := range spec.EphemeralContainers {
		ec, p, c := &spec.EphemeralContainers[i], path.Index(i), cs[i]
		for name, set := range map[string]bool{
			"ports": len(c.Ports) > 0, "livenessProbe": c.LivenessProbe != nil, "readinessProbe": c.ReadinessProbe != nil,
			"startupProbe": c.StartupProbe != nil, "lifecycle": c.Lifecycle != nil, "resizePolicy": len(c.ResizePolicy) > 0,
			"restartPolicy": c.RestartPolicy != nil,
			"resources":     len(c.Resources.Limits)+len(c.Resources.Requests)+len(c.Resources.Claims) > 0,
		} {
			if set {
				errs = append(errs, field.Forbidden(p.Child(name), "cannot be set for an Ephemeral Container"))
			}
		}
		if t := ec.TargetContainerName; t != "" && !ContainerNamed(spec, t) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), t))
		}
	}
	return errs
}

// ContainerNamed reports whether spec has a container or init container
// called name.
func ContainerNamed(spec *corev1.PodSpec, name string) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}
