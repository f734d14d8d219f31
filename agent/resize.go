package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/skiff-lab/skiff/cri"
)

// In-place resize, as the kubelet does it. The agent keeps, for each pod,
// the resources it has accepted for its containers (its allocation):
// containers are created with them and kept at them. When a pod's spec asks
// for other cpu or memory (through pods/resize), the agent accepts the new
// resources if the pod still fits the node with them, else it keeps the
// allocation and says why in a PodResizePending condition (Infeasible: the
// node is too small for it; Deferred: other pods hold what it needs). An
// accepted resize is applied to the running containers: in place through
// the runtime (runc update), or by restarting the container when its
// resizePolicy says RestartContainer for a resource that changed; until
// then the pod has a PodResizeInProgress condition.

// allocation is what a pod's containers were given, by container name.
type allocation map[string]v1.ResourceRequirements

// allocations are the agent's allocations of the pods it runs.
type allocations struct {
	mu    sync.Mutex
	byPod map[types.UID]allocation
}

func newAllocations() *allocations { return &allocations{byPod: map[types.UID]allocation{}} }

func (a *allocations) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byPod, uid)
}

// resizeState is what a sync decided about a pod's resize: why it is
// pending, or why applying it failed.
type resizeState struct {
	pendingReason, pendingMessage string
	err                           string
}

// resizable lists the resources a resize may change.
var resizable = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// specAllocation is what the pod's spec asks for.
func specAllocation(pod *v1.Pod) allocation {
	out := allocation{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			out[c.Name] = *c.Resources.DeepCopy()
		}
	}
	return out
}

// initialAllocation is a pod's allocation when the agent first syncs it:
// what its spec asks for, with the cpu and memory its existing containers
// run with (a resize the agent had not applied before it restarted is
// decided again).
func initialAllocation(pod *v1.Pod, st podState) allocation {
	out := specAllocation(pod)
	for name, r := range out {
		if l := st.latest(name); l != nil {
			if applied, ok := decodeResources(l.Resources); ok {
				out[name] = withResizable(r, applied)
			}
		}
	}
	return out
}

// withResizable is r with cpu and memory taken from applied.
func withResizable(r, applied v1.ResourceRequirements) v1.ResourceRequirements {
	out := *r.DeepCopy()
	for _, list := range []struct{ to, from *v1.ResourceList }{{&out.Requests, &applied.Requests}, {&out.Limits, &applied.Limits}} {
		for _, name := range resizable {
			q, ok := (*list.from)[name]
			switch {
			case ok && *list.to == nil:
				*list.to = v1.ResourceList{name: q}
			case ok:
				(*list.to)[name] = q
			default:
				delete(*list.to, name)
			}
		}
	}
	return out
}

// resizableOnly keeps r's cpu and memory.
func resizableOnly(r v1.ResourceRequirements) v1.ResourceRequirements {
	return withResizable(v1.ResourceRequirements{}, r)
}

func sameResizable(a, b v1.ResourceRequirements) bool {
	return apiequality.Semantic.DeepEqual(resizableOnly(a), resizableOnly(b))
}

func (al allocation) equal(other allocation) bool {
	if len(al) != len(other) {
		return false
	}
	for name, r := range al {
		o, ok := other[name]
		if !ok || !sameResizable(r, o) {
			return false
		}
	}
	return true
}

// encodeResources records a container's cpu and memory in the form the
// runtime keeps with it (cri.Resources.Source).
func encodeResources(r v1.ResourceRequirements) string {
	data, err := json.Marshal(resizableOnly(r))
	if err != nil {
		return ""
	}
	return string(data)
}

func decodeResources(s string) (v1.ResourceRequirements, bool) {
	var r v1.ResourceRequirements
	if s == "" || json.Unmarshal([]byte(s), &r) != nil {
		return r, false
	}
	return r, true
}

// allocate decides the pod's allocation for this sync: its current one,
// or its spec's when a resize asks for it and fits.
func (a *Agent) allocate(pod *v1.Pod, st podState) (allocation, resizeState) {
	a.allocs.mu.Lock()
	defer a.allocs.mu.Unlock()
	cur, ok := a.allocs.byPod[pod.UID]
	if !ok {
		cur = initialAllocation(pod, st)
		a.allocs.byPod[pod.UID] = cur
	}
	want := specAllocation(pod)
	if cur.equal(want) || pod.DeletionTimestamp != nil {
		return cur, resizeState{}
	}
	if reason, message := a.fits(pod, want); reason != "" {
		return cur, resizeState{pendingReason: reason, pendingMessage: message}
	}
	a.allocs.byPod[pod.UID] = want
	a.recorder.Event(pod, v1.EventTypeNormal, "ResizeStarted", fmt.Sprintf("Pod resize started (generation %d)", pod.Generation))
	return want, resizeState{}
}

// fits says why the pod does not fit the node with allocation want: the
// node's allocatable cpu or memory is smaller than the pod's requests
// (Infeasible), or than those plus the other pods' (Deferred). It is
// called with a.allocs locked.
func (a *Agent) fits(pod *v1.Pod, want allocation) (reason, message string) {
	allocatable := a.node.Allocatable()
	if allocatable == nil {
		return "", ""
	}
	requested := resourcehelper.PodRequests(withAllocation(pod, want), resourcehelper.PodResourcesOptions{})
	used := a.otherPodsRequests(pod.UID)
	for _, name := range resizable {
		allowed, ok := allocatable[name]
		if !ok {
			continue
		}
		req, inUse, capacity := amount(name, requested[name]), amount(name, used[name]), amount(name, allowed)
		switch {
		case req > capacity:
			return v1.PodReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", name, req, capacity)
		case req+inUse > capacity:
			return v1.PodReasonDeferred, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, req, inUse, capacity)
		}
	}
	return "", ""
}

// amount is cpu in millicores, memory in bytes, as the kubelet's
// admission messages give them.
func amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// otherPodsRequests sums the requests of the node's other live pods, at
// their allocations. Called with a.allocs locked.
func (a *Agent) otherPodsRequests(self types.UID) v1.ResourceList {
	sum := v1.ResourceList{}
	for _, p := range a.pods.all() {
		if p.UID == self || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if al, ok := a.allocs.byPod[p.UID]; ok {
			p = withAllocation(p, al)
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	return sum
}

// withAllocation is a copy of pod whose containers have al's resources.
func withAllocation(pod *v1.Pod, al allocation) *v1.Pod {
	out := pod.DeepCopy()
	for _, list := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range list {
			if r, ok := al[list[i].Name]; ok {
				list[i].Resources = *r.DeepCopy()
			}
		}
	}
	return out
}

// resources are the resources container c runs with: its allocation's.
func (s *podSync) resources(c *v1.Container) v1.ResourceRequirements {
	if r, ok := s.alloc[c.Name]; ok {
		return r
	}
	return c.Resources
}

// resizeAction applies a container's allocation to it while it runs.
type resizeAction struct {
	Container cri.Container
	Spec      *v1.Container
	// Restart: its resizePolicy restarts it for a resource that changed.
	Restart bool
}

// planResize lists the running containers (main ones and sidecars) whose
// cpu or memory differ from the pod's allocation.
func planResize(pod *v1.Pod, al allocation, st podState) []resizeAction {
	sb := st.readySandbox()
	if sb == nil || pod.DeletionTimestamp != nil {
		return nil
	}
	var out []resizeAction
	for _, c := range resizableContainers(pod) {
		cur := st.current(c.Name, sb.ID)
		want, ok := al[c.Name]
		if cur == nil || cur.State != cri.StateRunning || !ok {
			continue
		}
		applied, known := decodeResources(cur.Resources)
		if known && sameResizable(applied, want) {
			continue
		}
		out = append(out, resizeAction{Container: *cur, Spec: c, Restart: known && restartsFor(c, applied, want)})
	}
	return out
}

// resizableContainers are the containers a resize applies to: the
// sidecars and the main containers (regular init containers have run).
func resizableContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// restartsFor says the container's resizePolicy restarts it for a
// resource whose request or limit changes.
func restartsFor(c *v1.Container, applied, want v1.ResourceRequirements) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != v1.RestartContainer {
			continue
		}
		if !apiequality.Semantic.DeepEqual(applied.Requests[p.ResourceName], want.Requests[p.ResourceName]) ||
			!apiequality.Semantic.DeepEqual(applied.Limits[p.ResourceName], want.Limits[p.ResourceName]) {
			return true
		}
	}
	return false
}

// resize applies the allocation to the containers of acts. The pod's
// cgroup is widened first (to what both the old and the new resources
// allow), the containers updated or restarted, then the pod's cgroup set to
// the new resources, so that no container is ever above its pod's limit.
func (s *podSync) resize(ctx context.Context, st podState, acts []resizeAction) error {
	uid := string(s.pod.UID)
	final := podCgroupResources(withAllocation(s.pod, s.alloc))
	if err := s.a.rt.SetPodResources(uid, widest(podCgroupResources(appliedPod(s.pod, st)), final)); err != nil {
		return s.resizeFailed(err)
	}
	for _, act := range acts {
		if err := s.resizeContainer(ctx, st, act); err != nil {
			return s.resizeFailed(err)
		}
	}
	if err := s.a.rt.SetPodResources(uid, final); err != nil {
		return s.resizeFailed(err)
	}
	s.resizeState.err = ""
	s.event(v1.EventTypeNormal, "ResizeCompleted", fmt.Sprintf("Pod resize completed (generation %d)", s.pod.Generation))
	return nil
}

func (s *podSync) resizeContainer(ctx context.Context, st podState, act resizeAction) error {
	if !act.Restart {
		return s.a.rt.UpdateResources(ctx, act.Container.ID, containerResources(s.resources(act.Spec)))
	}
	s.event(v1.EventTypeNormal, "Killing", fmt.Sprintf("Container %s resize requires restart", act.Spec.Name))
	if err := s.stopContainer(ctx, act.Container, s.gracePeriod()); err != nil {
		return err
	}
	return s.startContainer(ctx, st, startAction{Container: act.Spec, Init: isSidecar(act.Spec), Attempt: act.Container.Attempt + 1})
}

func (s *podSync) resizeFailed(err error) error {
	s.resizeState.err = err.Error()
	s.event(v1.EventTypeWarning, "ResizeError", "Pod resize error: "+err.Error())
	return fmt.Errorf("resize: %w", err)
}

// appliedPod is a copy of pod whose running containers have the resources
// they run with.
func appliedPod(pod *v1.Pod, st podState) *v1.Pod {
	al := specAllocation(pod)
	for name, r := range al {
		if l := st.latest(name); l != nil && l.State == cri.StateRunning {
			if applied, ok := decodeResources(l.Resources); ok {
				al[name] = withResizable(r, applied)
			}
		}
	}
	return withAllocation(pod, al)
}

// widest is a cgroup setting that allows what a and b both allow: the
// larger shares, quota and memory limit; none where either has none.
func widest(a, b *specs.LinuxResources) *specs.LinuxResources {
	if a == nil || b == nil {
		return nil
	}
	out := &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: a.CPU.Shares}}
	if *b.CPU.Shares > *a.CPU.Shares {
		out.CPU.Shares = b.CPU.Shares
	}
	if a.CPU.Quota != nil && b.CPU.Quota != nil {
		out.CPU.Quota, out.CPU.Period = a.CPU.Quota, a.CPU.Period
		if *b.CPU.Quota > *a.CPU.Quota {
			out.CPU.Quota = b.CPU.Quota
		}
	}
	if a.Memory != nil && b.Memory != nil {
		out.Memory = a.Memory
		if *b.Memory.Limit > *a.Memory.Limit {
			out.Memory = b.Memory
		}
	}
	return out
}

// setResizeConditions sets or clears PodResizePending and
// PodResizeInProgress: pending while a resize waits to fit, in progress
// while a running container does not have its allocation yet (reason Error
// when applying it failed).
func setResizeConditions(s *v1.PodStatus, in statusInput) {
	if r := in.resize; r.pendingReason != "" {
		setConditionMessage(s, v1.PodResizePending, true, r.pendingReason, r.pendingMessage, in.now)
	} else {
		removeCondition(s, v1.PodResizePending)
	}
	switch {
	case in.resize.err != "":
		setConditionMessage(s, v1.PodResizeInProgress, true, v1.PodReasonError, in.resize.err, in.now)
	case len(planResize(in.pod, in.alloc, in.state)) > 0:
		setConditionMessage(s, v1.PodResizeInProgress, true, "", "", in.now)
	default:
		removeCondition(s, v1.PodResizeInProgress)
	}
}

func removeCondition(s *v1.PodStatus, t v1.PodConditionType) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			s.Conditions = append(s.Conditions[:i], s.Conditions[i+1:]...)
			return
		}
	}
}

// statusResources are a container's resources as its status reports them:
// its allocation, with the cpu and memory a running container runs with.
func statusResources(alloc v1.ResourceRequirements, cur cri.Container) *v1.ResourceRequirements {
	out := alloc.DeepCopy()
	applied, ok := decodeResources(cur.Resources)
	if cur.State != cri.StateRunning || !ok {
		return out
	}
	for _, list := range []struct{ to, from v1.ResourceList }{{out.Requests, applied.Requests}, {out.Limits, applied.Limits}} {
		for _, name := range resizable {
			_, has := list.to[name]
			if q, ok := list.from[name]; ok && has {
				list.to[name] = q
			}
		}
	}
	return out
}
