package stats

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cri"
)

// sample is one reading of the node and of the pods running at the time.
// It is not changed once taken.
type sample struct {
	boot    time.Time
	node    *usage // nil if /proc could not be read
	pods    []Pod
	cgroups map[string]usage // by cgroup path; absent if gone or unreadable
}

// summarize builds the stats summary of cur, computing CPU rates since
// prev (either may be nil). root is the agent's parent cgroup of all pods.
// Pods and containers whose cgroup is absent from cur are left out.
func summarize(nodeName, root string, prev, cur *sample) *v1alpha1.Summary {
	s := &v1alpha1.Summary{Node: v1alpha1.NodeStats{NodeName: nodeName}, Pods: []v1alpha1.PodStats{}}
	if cur == nil {
		return s
	}
	if prev == nil {
		prev = &sample{}
	}
	s.Node.StartTime = metav1.NewTime(cur.boot)
	if cur.node != nil {
		s.Node.CPU = cpuStats(prev.node, *cur.node)
		s.Node.Memory = memoryStats(*cur.node)
	}
	for _, pod := range cur.pods {
		if ps, ok := podStats(root, pod, prev, cur); ok {
			s.Pods = append(s.Pods, ps)
		}
	}
	return s
}

// podStats is the pod's entry in the summary; ok is false if its cgroup
// was not read. Its start time is its earliest container's (Pod carries no
// other), zero if none is known.
func podStats(root string, pod Pod, prev, cur *sample) (v1alpha1.PodStats, bool) {
	path := cri.PodCgroup(root, pod.UID)
	u, ok := cur.cgroups[path]
	if !ok {
		return v1alpha1.PodStats{}, false
	}
	ps := v1alpha1.PodStats{
		PodRef:     v1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Containers: []v1alpha1.ContainerStats{},
		CPU:        cpuStats(lookup(prev, path), u),
		Memory:     memoryStats(u),
	}
	var start time.Time
	for _, ctr := range pod.Containers {
		if start.IsZero() || (!ctr.StartTime.IsZero() && ctr.StartTime.Before(start)) {
			start = ctr.StartTime
		}
		path := cri.ContainerCgroup(root, pod.UID, ctr.ID)
		cu, ok := cur.cgroups[path]
		if !ok {
			continue
		}
		ps.Containers = append(ps.Containers, v1alpha1.ContainerStats{
			Name:      ctr.Name,
			StartTime: metav1.NewTime(ctr.StartTime),
			CPU:       cpuStats(lookup(prev, path), cu),
			Memory:    memoryStats(cu),
		})
	}
	ps.StartTime = metav1.NewTime(start)
	return ps, true
}

// lookup is the cgroup at path in s, or nil.
func lookup(s *sample, path string) *usage {
	if u, ok := s.cgroups[path]; ok {
		return &u
	}
	return nil
}

// cpuStats is cur's CPU time, and its rate since prev in nanocores if prev
// is an earlier reading of the same counter that has not gone backwards
// (a recreated cgroup starts again from 0).
func cpuStats(prev *usage, cur usage) *v1alpha1.CPUStats {
	st := &v1alpha1.CPUStats{Time: metav1.NewTime(cur.time), UsageCoreNanoSeconds: ptr.To(cur.cpu)}
	if prev == nil || !cur.time.After(prev.time) || cur.cpu < prev.cpu {
		return st
	}
	elapsed := cur.time.Sub(prev.time).Seconds()
	st.UsageNanoCores = ptr.To(uint64(float64(cur.cpu-prev.cpu) / elapsed))
	return st
}

// memoryStats is cur's memory use; available bytes only under a limit.
func memoryStats(cur usage) *v1alpha1.MemoryStats {
	ws := cur.workingSet()
	st := &v1alpha1.MemoryStats{
		Time:            metav1.NewTime(cur.time),
		UsageBytes:      ptr.To(cur.memory),
		WorkingSetBytes: ptr.To(ws),
		RSSBytes:        ptr.To(cur.rss),
	}
	if cur.limit > 0 {
		st.AvailableBytes = ptr.To(cur.limit - min(ws, cur.limit))
	}
	return st
}
