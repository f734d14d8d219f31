// Package quota computes what objects use of a namespace's ResourceQuotas,
// as kube-apiserver's quota evaluators do: object counts (the legacy names
// pods, services, configmaps, secrets, replicationcontrollers,
// resourcequotas, and count/<resource>[.<group>] for every resource
// tracked), a pod's compute requests and limits (cpu, memory,
// ephemeral-storage; "cpu" meaning requests.cpu), and a service's node
// ports and load balancers. The ResourceQuota admission plugin and the
// resource quota controller both use it.
package quota

import (
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	podresource "k8s.io/component-helpers/resource"
)

// Tracked are the resources whose objects quotas count.
var Tracked = []schema.GroupResource{
	v1.Resource("pods"), v1.Resource("services"), v1.Resource("configmaps"), v1.Resource("secrets"),
	v1.Resource("replicationcontrollers"), v1.Resource("resourcequotas"),
	{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "replicasets"},
}

// legacyCounts are the count names of the core resources that have one.
var legacyCounts = map[string]v1.ResourceName{
	"pods": v1.ResourcePods, "services": v1.ResourceServices, "configmaps": v1.ResourceConfigMaps,
	"secrets": v1.ResourceSecrets, "replicationcontrollers": v1.ResourceReplicationControllers,
	"resourcequotas": v1.ResourceQuotas,
}

// podCompute are the compute names a pod's usage has.
var podCompute = []v1.ResourceName{
	v1.ResourceRequestsCPU, v1.ResourceRequestsMemory, v1.ResourceRequestsEphemeralStorage,
	v1.ResourceLimitsCPU, v1.ResourceLimitsMemory, v1.ResourceLimitsEphemeralStorage,
	v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage,
}

// CountName is count/<resource>[.<group>].
func CountName(gr schema.GroupResource) v1.ResourceName {
	if gr.Group == "" {
		return v1.ResourceName("count/" + gr.Resource)
	}
	return v1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// standardNames are the unqualified names a quota may hold, as
// kube-apiserver's: what a pod's compute, object counts, claims' storage
// and services' ports use.
var standardNames = []v1.ResourceName{
	v1.ResourceRequestsStorage, v1.ResourcePersistentVolumeClaims,
	v1.ResourceServicesNodePorts, v1.ResourceServicesLoadBalancers,
}

// ValidName checks a name in a quota's spec.hard as kube-apiserver does:
// a qualified name (count/deployments.apps, requests.example.com/dongle,
// gold.storageclass.storage.k8s.io/persistentvolumeclaims), and, without
// a "/", one of the standard names (requests.cpu, pods, hugepages-2Mi…).
// What nothing here counts is used 0.
func ValidName(name v1.ResourceName) []string {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return msgs
	}
	if strings.Contains(string(name), "/") || slices.Contains(podCompute, name) || slices.Contains(standardNames, name) ||
		slices.Contains(slices.Collect(maps.Values(legacyCounts)), name) ||
		strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), v1.ResourceRequestsHugePagesPrefix) {
		return nil
	}
	return []string{"must be a standard resource for quota"}
}

// Usage is what obj, an object of gr, uses at now: nothing for a pod that
// has terminated or outlived its deletion grace period.
func Usage(gr schema.GroupResource, obj runtime.Object, now time.Time) v1.ResourceList {
	if pod, ok := obj.(*v1.Pod); ok && !countsPod(pod, now) {
		return v1.ResourceList{}
	}
	one := resource.MustParse("1")
	usage := v1.ResourceList{CountName(gr): one}
	if name, ok := legacyCounts[gr.Resource]; ok && gr.Group == "" {
		usage[name] = one
	}
	switch o := obj.(type) {
	case *v1.Pod:
		addPodCompute(usage, o)
	case *v1.Service:
		addServicePorts(usage, o)
	}
	return usage
}

func countsPod(pod *v1.Pod, now time.Time) bool {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Time.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		return !now.After(end)
	}
	return true
}

func addPodCompute(usage v1.ResourceList, pod *v1.Pod) {
	requests := podresource.PodRequests(pod, podresource.PodResourcesOptions{})
	limits := podresource.PodLimits(pod, podresource.PodResourcesOptions{})
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := requests[name]; ok {
			usage[name] = q.DeepCopy()
			usage[v1.ResourceName("requests."+string(name))] = q.DeepCopy()
		}
		if q, ok := limits[name]; ok {
			usage[v1.ResourceName("limits."+string(name))] = q.DeepCopy()
		}
	}
	// Extended resources (example.com/dongle) and huge pages are quota'd
	// by their requests only: requests.example.com/dongle.
	for name, q := range requests {
		if isExtendedResource(name) || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			usage[v1.ResourceName("requests."+string(name))] = q.DeepCopy()
		}
	}
}

// isExtendedResource: a resource name outside kubernetes.io that is not a
// quota name itself.
func isExtendedResource(name v1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, "requests.")
}

func addServicePorts(usage v1.ResourceList, svc *v1.Service) {
	var nodePorts int64
	switch svc.Spec.Type {
	case v1.ServiceTypeNodePort:
		nodePorts = int64(len(svc.Spec.Ports))
	case v1.ServiceTypeLoadBalancer:
		usage[v1.ResourceServicesLoadBalancers] = resource.MustParse("1")
		if svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts {
			nodePorts = int64(len(svc.Spec.Ports))
		}
	}
	usage[v1.ResourceServicesNodePorts] = *resource.NewQuantity(nodePorts, resource.DecimalSI)
}

// Add returns a + b.
func Add(a, b v1.ResourceList) v1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for name, q := range b {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// Growth is what usage has beyond old: the resources that grew, by how
// much.
func Growth(usage, old v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range usage {
		grown := q.DeepCopy()
		grown.Sub(old[name])
		if grown.Sign() > 0 {
			out[name] = grown
		}
	}
	return out
}

// Mask keeps of usage the resources hard names, zero when usage lacks one.
func Mask(usage, hard v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name := range hard {
		q, ok := usage[name]
		if !ok {
			q = *resource.NewQuantity(0, resource.DecimalSI)
		}
		out[name] = q
	}
	return out
}

// Exceeded lists, sorted, the resources of used over hard.
func Exceeded(used, hard v1.ResourceList) []v1.ResourceName {
	var over []v1.ResourceName
	for name, limit := range hard {
		if q, ok := used[name]; ok && q.Cmp(limit) > 0 {
			over = append(over, name)
		}
	}
	slices.Sort(over)
	return over
}

// Describe renders names of list as "name=quantity,...".
func Describe(list v1.ResourceList, names []v1.ResourceName) string {
	parts := make([]string, len(names))
	for i, name := range names {
		q := list[name]
		parts[i] = string(name) + "=" + q.String()
	}
	return strings.Join(parts, ",")
}

// ComputeNames are the compute resources of hard a pod must state (a
// quota on requests.cpu needs every container's cpu request).
func ComputeNames(hard v1.ResourceList) []v1.ResourceName {
	var out []v1.ResourceName
	for name := range hard {
		if name != v1.ResourcePods && slices.Contains(podCompute, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Matches says whether a quota with scopes counts obj: a quota without
// scopes counts everything; one with scopes only pods in all of them.
func Matches(scopes []v1.ResourceQuotaScope, obj runtime.Object) bool {
	if len(scopes) == 0 {
		return true
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return false
	}
	for _, s := range scopes {
		if !inScope(s, pod) {
			return false
		}
	}
	return true
}

// Scopes are the scopes Matches knows.
var Scopes = []v1.ResourceQuotaScope{v1.ResourceQuotaScopeTerminating, v1.ResourceQuotaScopeNotTerminating,
	v1.ResourceQuotaScopeBestEffort, v1.ResourceQuotaScopeNotBestEffort}

func inScope(s v1.ResourceQuotaScope, pod *v1.Pod) bool {
	terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	bestEffort := len(podresource.PodRequests(pod, podresource.PodResourcesOptions{})) == 0 &&
		len(podresource.PodLimits(pod, podresource.PodResourcesOptions{})) == 0
	switch s {
	case v1.ResourceQuotaScopeTerminating:
		return terminating
	case v1.ResourceQuotaScopeNotTerminating:
		return !terminating
	case v1.ResourceQuotaScopeBestEffort:
		return bestEffort
	case v1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort
	}
	return false
}

// MissingCompute lists, of the compute names a quota sets, those some
// container of pod states neither as a request nor (limits.*) as a limit.
func MissingCompute(pod *v1.Pod, names []v1.ResourceName) []v1.ResourceName {
	var missing []v1.ResourceName
	for _, name := range names {
		res, limit := strings.CutPrefix(string(name), "limits.")
		if !limit {
			res = strings.TrimPrefix(res, "requests.")
		}
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			list := c.Resources.Requests
			if limit {
				list = c.Resources.Limits
			}
			if _, ok := list[v1.ResourceName(res)]; !ok {
				missing = append(missing, name)
				break
			}
		}
	}
	return missing
}
