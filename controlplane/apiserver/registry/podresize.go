package registry

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// In-place resize: a pod's containers' cpu and memory requests and limits
// (and their resizePolicy) change through its resize subresource only, as
// kube-apiserver has it; the node's agent then decides whether the new
// Resources fit and applies them to the running containers.

// prepareResize makes pod the stored pod prev with only what a resize may
// change taken from pod: each container's resources and resizePolicy (of
// the sidecars too), defaulted as on create.
func prepareResize(pod, prev *corev1.Pod) {
	spec := &pod.Spec
	if len(spec.Containers) != len(prev.Spec.Containers) || len(spec.InitContainers) != len(prev.Spec.InitContainers) {
		return // validateResize refuses it
	}
	resized := prev.Spec.DeepCopy()
	if !takeResources(resized.Containers, spec.Containers) || !takeResources(resized.InitContainers, spec.InitContainers) {
		return
	}
	pod.Spec = *resized
}

// takeResources copies the resources and resizePolicy of each container of
// from onto the container of the same place in to; false if the names do
// not match.
func takeResources(to, from []corev1.Container) bool {
	for i := range to {
		if to[i].Name != from[i].Name {
			return false
		}
	}
	for i := range to {
		to[i].Resources = *from[i].Resources.DeepCopy()
		to[i].ResizePolicy = from[i].ResizePolicy
		defaultRequestsFromLimits(&to[i].Resources)
	}
	return true
}

// validateResize checks a resize against the stored pod: the same
// containers, no request or limit removed, only cpu and memory changed,
// regular init containers untouched, and the same QoS class.
func validateResize(pod, prev *corev1.Pod) field.ErrorList {
	path := field.NewPath("spec")
	if prev.Spec.OS != nil && prev.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	errs := resizeOrdering(pod.Spec.Containers, prev.Spec.Containers, path, "containers")
	errs = append(errs, resizeOrdering(pod.Spec.InitContainers, prev.Spec.InitContainers, path, "initContainers")...)
	if len(errs) > 0 {
		return errs
	}
	if qosClass(&pod.Spec) != podQOS(prev) {
		errs = append(errs, field.Invalid(path, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	for i := range prev.Spec.Containers {
		errs = append(errs, validateContainerResize(&pod.Spec.Containers[i], &prev.Spec.Containers[i], path.Child("containers").Index(i))...)
	}
	for i := range prev.Spec.InitContainers {
		c, old := &pod.Spec.InitContainers[i], &prev.Spec.InitContainers[i]
		if !isSidecarContainer(old) {
			if !apiequality.Semantic.DeepEqual(c, old) {
				errs = append(errs, field.Forbidden(path, "resources for non-sidecar init containers are immutable"))
			}
			continue
		}
		errs = append(errs, validateContainerResize(c, old, path.Child("initContainers").Index(i))...)
	}
	return errs
}

// resizeOrdering: no container (of the list spec.<list>) added, removed,
// renamed or moved.
func resizeOrdering(cs, old []corev1.Container, spec *field.Path, list string) field.ErrorList {
	path := spec.Child(list)
	if len(cs) != len(old) {
		return field.ErrorList{field.Forbidden(path, list+" may not be added or removed on resize")}
	}
	var errs field.ErrorList
	for i := range old {
		if cs[i].Name != old[i].Name {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"), list+" may not be renamed or reordered on resize"))
		}
	}
	return errs
}

// validateContainerResize: requests and limits may change but not go, and
// only those of cpu and memory.
func validateContainerResize(c, old *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := path.Child("resources")
	if removed(c.Resources.Requests, old.Resources.Requests) {
		errs = append(errs, field.Forbidden(rp.Child("requests"), "resource requests cannot be removed"))
	}
	if removed(c.Resources.Limits, old.Resources.Limits) {
		errs = append(errs, field.Forbidden(rp.Child("limits"), "resource limits cannot be removed"))
	}
	for _, lists := range [][2]corev1.ResourceList{{c.Resources.Requests, old.Resources.Requests}, {c.Resources.Limits, old.Resources.Limits}} {
		if !apiequality.Semantic.DeepEqual(withoutCPUMemory(lists[0]), withoutCPUMemory(lists[1])) {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), "only cpu and memory resources are mutable"))
			break
		}
	}
	return append(errs, validateResources(&c.Resources, rp)...)
}

func removed(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

func withoutCPUMemory(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			out[name] = q
		}
	}
	return out
}

// podQOS is the stored pod's QoS class: its status's, or computed.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return qosClass(&pod.Spec)
}

func isSidecarContainer(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
