package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1helper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// preemption is where a pod that fits nowhere can go once some pods of
// lower priority are evicted, and those pods.
type preemption struct {
	node    string
	victims []*corev1.Pod
}

// preempt finds, as kube-scheduler's DefaultPreemption does, the node
// where evicting the fewest and least important pods of lower priority
// than pod lets it fit: on each node whose class filters pass, every
// lower-priority pod is taken away; if pod then passes the filters, the
// removed pods are given back one by one, most important first, and those
// that no longer let it fit are the victims. Among the nodes, the one
// whose most important victim has the lowest priority wins, then the
// lowest sum of victims' priorities, then the fewest victims. A pod that
// may not preempt (preemptionPolicy Never), or whose earlier victims are
// still terminating on its nominated node, gets nothing.
func (d *decider) preempt(ctx context.Context, pod *corev1.Pod, snap Snapshot) (preemption, bool) {
	if !eligibleToPreempt(pod, snap) {
		return preemption{}, false
	}
	state := framework.NewCycleState()
	for _, p := range d.profile.PreFilters {
		if st := p.PreFilter(ctx, state, pod, snap.Nodes); st != nil {
			return preemption{}, false
		}
	}
	var best preemption
	found := false
	for _, ni := range snap.Nodes {
		if runFilters(ctx, state, pod, ni, d.profile.ClassFilters) != nil {
			continue
		}
		victims, ok := d.victimsOn(ctx, state, pod, ni)
		if ok && (!found || better(victims, best.victims)) {
			best, found = preemption{node: ni.Node.Name, victims: victims}, true
		}
	}
	return best, found
}

// victimsOn returns the pods to evict from ni for pod to fit there.
func (d *decider) victimsOn(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) ([]*corev1.Pod, bool) {
	prio := v1helper.PodPriority(pod)
	sim := ni.Clone()
	var lower []*corev1.Pod
	for _, p := range ni.Pods {
		if v1helper.PodPriority(p) < prio && p.DeletionTimestamp == nil {
			sim.RemovePod(p)
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 || runFilters(ctx, state, pod, sim, d.profile.Filters) != nil {
		return nil, false
	}
	slices.SortFunc(lower, func(a, b *corev1.Pod) int {
		if pa, pb := v1helper.PodPriority(a), v1helper.PodPriority(b); pa != pb {
			return int(pb - pa)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	var victims []*corev1.Pod
	for _, p := range lower {
		sim.AddPod(p)
		if runFilters(ctx, state, pod, sim, d.profile.Filters) != nil {
			sim.RemovePod(p)
			victims = append(victims, p)
		}
	}
	return victims, true
}

// better says whether victims a cost less than b.
func better(a, b []*corev1.Pod) bool {
	highest := func(vs []*corev1.Pod) int32 {
		h := int32(-1 << 31)
		for _, v := range vs {
			h = max(h, v1helper.PodPriority(v))
		}
		return h
	}
	sum := func(vs []*corev1.Pod) int64 {
		var s int64
		for _, v := range vs {
			// Shifted so that negative priorities still add up to more
			// than none, as kube-scheduler counts them.
			s += int64(v1helper.PodPriority(v)) + 1<<31
		}
		return s
	}
	if ha, hb := highest(a), highest(b); ha != hb {
		return ha < hb
	}
	if sa, sb := sum(a), sum(b); sa != sb {
		return sa < sb
	}
	return len(a) < len(b)
}

// eligibleToPreempt: a pod may preempt unless its policy says never, or
// lower-priority pods on the node it was nominated to are still going.
func eligibleToPreempt(pod *corev1.Pod, snap Snapshot) bool {
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == corev1.PreemptNever {
		return false
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" {
		return true
	}
	i, ok := slices.BinarySearchFunc(snap.Nodes, nominated, func(ni *framework.NodeInfo, name string) int {
		return cmp.Compare(ni.Node.Name, name)
	})
	if !ok {
		return true
	}
	for _, p := range snap.Nodes[i].Pods {
		if p.DeletionTimestamp != nil && v1helper.PodPriority(p) < v1helper.PodPriority(pod) {
			return false
		}
	}
	return true
}

// evict carries a preemption out: each victim gets the DisruptionTarget
// condition, a Preempted event and is deleted (with its grace period);
// the preemptor is nominated to the node, where it goes once they are
// gone.
func (s *Scheduler) evict(ctx context.Context, pod *corev1.Pod, p preemption) {
	preemptionAttempts.Inc()
	for _, v := range p.victims {
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
			Message: Name + ": preempting to accommodate a higher priority pod", LastTransitionTime: metav1.Now()}
		if err := s.patchStatus(ctx, v, map[string]any{"conditions": []corev1.PodCondition{cond}}); err != nil && !apierrors.IsNotFound(err) {
			slog.Warn("preemption: mark victim", "pod", v.Name, "namespace", v.Namespace, "err", err)
		}
		err := s.client.CoreV1().Pods(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(v.UID))})
		if err != nil && !apierrors.IsNotFound(err) {
			slog.Warn("preemption: delete victim", "pod", v.Name, "namespace", v.Namespace, "err", err)
			continue
		}
		s.recorder.Eventf(v, corev1.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", pod.UID, p.node)
	}
	if err := s.patchStatus(ctx, pod, map[string]any{"nominatedNodeName": p.node}); err != nil && ctx.Err() == nil {
		slog.Warn("preemption: nominate", "pod", pod.Name, "namespace", pod.Namespace, "err", err)
	}
}

// patchStatus merges status into the pod's status.
func (s *Scheduler) patchStatus(ctx context.Context, pod *corev1.Pod, status map[string]any) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
