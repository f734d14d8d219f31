package downward

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ErrUnsupportedResource is wrapped by ResourceValue's error for a resource
// it does not serve; the message reads "unsupported container resource: <r>".
var ErrUnsupportedResource = errors.New("unsupported container resource")

// ResourceValue returns a container's request or limit as the kubelet
// renders it for the Downward API. sel.Resource is one of
// {requests,limits}.{cpu,memory,ephemeral-storage,hugepages-<size>}.
//
// The container is sel.ContainerName, or containerName (the container being
// set up) when the selector names none; it is looked up among the pod's
// containers, init containers and ephemeral containers.
//
// The value is divided by sel.Divisor (1 when zero) and rounded up, so any
// non-zero amount is at least 1; cpu is divided in millicores, so 250m with
// divisor 1 is 1 and with divisor 1m is 250. A zero or negative amount is 0.
//
// A limit that is unset or zero defaults, for cpu, memory and
// ephemeral-storage, to the node's allocatable amount (nodeAllocatable)
// when that has the resource; for cpu and memory a pod-level limit
// (pod.Spec.Resources), when set, takes the place of the allocatable amount.
// Requests have no default.
func ResourceValue(pod *v1.Pod, containerName string, sel *v1.ResourceFieldSelector, nodeAllocatable v1.ResourceList) (string, error) {
	name := containerName
	if sel.ContainerName != "" {
		name = sel.ContainerName
	}
	c := findContainer(pod, name)
	if c == nil {
		return "", fmt.Errorf("container %s not found", name)
	}
	kind, res, _ := strings.Cut(sel.Resource, ".")
	if !servedResource(v1.ResourceName(res)) {
		return "", fmt.Errorf("%w: %s", ErrUnsupportedResource, sel.Resource)
	}
	var amount resource.Quantity
	switch kind {
	case "requests":
		amount = c.Resources.Requests[v1.ResourceName(res)]
	case "limits":
		amount = limit(pod, c, v1.ResourceName(res), nodeAllocatable)
	default:
		return "", fmt.Errorf("%w: %s", ErrUnsupportedResource, sel.Resource)
	}
	return divide(amount, sel.Divisor, v1.ResourceName(res))
}

// defaultedLimits are the resources whose missing limit defaults to the
// node's allocatable amount; hugepages always have a limit.
var defaultedLimits = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}

func servedResource(name v1.ResourceName) bool {
	return slices.Contains(defaultedLimits, name) || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// limit is the container's limit for name, defaulted as ResourceValue says.
func limit(pod *v1.Pod, c *v1.Container, name v1.ResourceName, allocatable v1.ResourceList) resource.Quantity {
	own := c.Resources.Limits[name]
	if !own.IsZero() || !slices.Contains(defaultedLimits, name) {
		return own
	}
	node, ok := allocatable[name]
	if !ok {
		return own
	}
	if pod.Spec.Resources != nil && resourcehelper.IsSupportedPodLevelResource(name) {
		if q, ok := pod.Spec.Resources.Limits[name]; ok && !q.IsZero() {
			return q
		}
	}
	return node
}

// divide renders ceil(amount / divisor) in whole units (millicores for cpu).
func divide(amount, divisor resource.Quantity, name v1.ResourceName) (string, error) {
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if divisor.Sign() < 0 {
		return "", fmt.Errorf("invalid divisor %s for %s", divisor.String(), name)
	}
	if amount.Sign() <= 0 {
		return "0", nil
	}
	n, d := amount.Value(), divisor.Value()
	if name == v1.ResourceCPU {
		n, d = amount.MilliValue(), divisor.MilliValue()
	}
	q := n / d
	if n%d != 0 {
		q++
	}
	return strconv.FormatInt(q, 10), nil
}

// findContainer returns the named container of the pod, or nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}
