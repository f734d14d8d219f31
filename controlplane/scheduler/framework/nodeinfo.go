package framework

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Default requests used for scoring pods that request nothing, so that
// many zero-request pods still spread (kube-scheduler's non-zero defaults).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 << 20
)

// Resources is an amount of each schedulable resource.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// Scalar holds extended resources (e.g. example.com/gpu) and hugepages.
	Scalar map[corev1.ResourceName]int64
}

// ResourcesOf converts a resource list.
func ResourcesOf(list corev1.ResourceList) Resources {
	var r Resources
	for name, q := range list {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		case corev1.ResourcePods:
		default:
			if r.Scalar == nil {
				r.Scalar = map[corev1.ResourceName]int64{}
			}
			r.Scalar[name] = q.Value()
		}
	}
	return r
}

func (r *Resources) add(o Resources, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[corev1.ResourceName]int64{}
		}
		r.Scalar[name] += sign * v
	}
}

// PodRequests is what a pod asks for, counting init containers (and
// sidecars) and overhead as Kubernetes does.
func PodRequests(pod *corev1.Pod) Resources {
	return ResourcesOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

// nonZeroDefaults stand in, for scoring, for a container's missing cpu or
// memory request.
var nonZeroDefaults = corev1.ResourceList{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
}

// NonZeroRequests is PodRequests with each container's missing cpu and
// memory requests counted as the scoring defaults, as kube-scheduler does.
func NonZeroRequests(pod *corev1.Pod) Resources {
	return ResourcesOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults}))
}

// HostPort is one host port a pod uses.
type HostPort struct {
	IP       string
	Protocol corev1.Protocol
	Port     int32
}

// NodeInfo is the scheduler's view of one node: the node and the pods
// bound (or assumed) to it, with their sums. Not safe for concurrent
// writes; the cache hands out snapshots.
type NodeInfo struct {
	Node             *corev1.Node
	Pods             map[string]*corev1.Pod // by UID
	Requested        Resources
	NonZeroRequested Resources
	UsedPorts        map[HostPort]int
	Allocatable      Resources
	AllowedPods      int64
	// Images maps each image the node holds, by normalized name, to its size.
	Images map[string]int64
	// AntiAffinityPods are the pods with required anti-affinity terms,
	// which every placement nearby must respect.
	AntiAffinityPods map[string]*corev1.Pod
	// Class names what the class filters read of the node (ClassOf).
	Class string
}

// NewNodeInfo returns the view of a node with no pods.
func NewNodeInfo(node *corev1.Node) *NodeInfo {
	ni := &NodeInfo{Pods: map[string]*corev1.Pod{}, UsedPorts: map[HostPort]int{}, AntiAffinityPods: map[string]*corev1.Pod{}}
	ni.SetNode(node)
	return ni
}

// SetNode replaces the node object.
func (ni *NodeInfo) SetNode(node *corev1.Node) {
	ni.Node = node
	ni.Class = ClassOf(node)
	ni.Allocatable = ResourcesOf(node.Status.Allocatable)
	ni.AllowedPods = node.Status.Allocatable.Pods().Value()
	ni.Images = make(map[string]int64, len(node.Status.Images))
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			ni.Images[NormalizeImage(name)] = img.SizeBytes
		}
	}
}

// NormalizeImage names an image as a runtime reports it: nginx becomes
// docker.io/library/nginx:latest.
func NormalizeImage(image string) string {
	name := image
	if i := strings.IndexByte(name, '/'); i < 0 {
		name = "docker.io/library/" + name
	} else if first := name[:i]; !strings.ContainsAny(first, ".:") && first != "localhost" {
		name = "docker.io/" + name
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	if !strings.Contains(last, ":") && !strings.Contains(name, "@") {
		name += ":latest"
	}
	return name
}

// AddPod counts pod on the node; adding a pod twice counts it once.
func (ni *NodeInfo) AddPod(pod *corev1.Pod) {
	if old, ok := ni.Pods[string(pod.UID)]; ok {
		ni.RemovePod(old)
	}
	ni.Pods[string(pod.UID)] = pod
	ni.Requested.add(PodRequests(pod), 1)
	ni.NonZeroRequested.add(NonZeroRequests(pod), 1)
	for _, p := range HostPorts(pod) {
		ni.UsedPorts[p]++
	}
	if HasRequiredAntiAffinity(pod) {
		ni.AntiAffinityPods[string(pod.UID)] = pod
	}
}

// HasRequiredAntiAffinity reports whether pod has required anti-affinity
// terms.
func HasRequiredAntiAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// RemovePod stops counting pod.
func (ni *NodeInfo) RemovePod(pod *corev1.Pod) {
	old, ok := ni.Pods[string(pod.UID)]
	if !ok {
		return
	}
	delete(ni.Pods, string(pod.UID))
	delete(ni.AntiAffinityPods, string(pod.UID))
	ni.Requested.add(PodRequests(old), -1)
	ni.NonZeroRequested.add(NonZeroRequests(old), -1)
	for _, p := range HostPorts(old) {
		if ni.UsedPorts[p]--; ni.UsedPorts[p] <= 0 {
			delete(ni.UsedPorts, p)
		}
	}
}

// HostPorts lists the host ports a pod's containers ask for.
func HostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					ip := p.HostIP
					if ip == "" {
						ip = "0.0.0.0"
					}
					proto := p.Protocol
					if proto == "" {
						proto = corev1.ProtocolTCP
					}
					out = append(out, HostPort{IP: ip, Protocol: proto, Port: p.HostPort})
				}
			}
		}
	}
	return out
}

// Clone returns a copy that can change without touching ni (the pods
// themselves are shared and must not be modified).
func (ni *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{Node: ni.Node, Pods: make(map[string]*corev1.Pod, len(ni.Pods)), UsedPorts: make(map[HostPort]int, len(ni.UsedPorts)),
		AntiAffinityPods: make(map[string]*corev1.Pod, len(ni.AntiAffinityPods)),
		Requested:        ni.Requested.clone(), NonZeroRequested: ni.NonZeroRequested.clone(), Allocatable: ni.Allocatable, AllowedPods: ni.AllowedPods,
		Images: ni.Images}
	for k, v := range ni.Pods {
		c.Pods[k] = v
	}
	for k, v := range ni.UsedPorts {
		c.UsedPorts[k] = v
	}
	for k, v := range ni.AntiAffinityPods {
		c.AntiAffinityPods[k] = v
	}
	return c
}

func (r Resources) clone() Resources {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[corev1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// ClassOf is the key of node's class: its unschedulable flag and its
// NoSchedule and NoExecute taints, all that the class filters
// (NodeUnschedulable, TaintToleration) read. The scheduler judges a class
// once per pod instead of each of its nodes. It is "" for a schedulable
// node without such taints.
func ClassOf(node *corev1.Node) string {
	var parts []string
	if node.Spec.Unschedulable {
		parts = append(parts, "unschedulable")
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			parts = append(parts, t.Key+"="+t.Value+":"+string(t.Effect))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
