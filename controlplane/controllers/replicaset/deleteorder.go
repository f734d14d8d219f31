package replicaset

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	corev1 "k8s.io/api/core/v1"
)

// deletionCostAnnotation lets users rank a ReplicaSet's pods for scale
// down: lower cost goes first.
const deletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// podsToDelete returns the n pods of active to delete first. related are
// the pods of every ReplicaSet with the same controller (a Deployment's
// ReplicaSets); a pod on a node crowded with them goes before one on a
// node it has to itself. now ages pods for the logarithmic comparisons.
func podsToDelete(active, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	pods := slices.Clone(active)
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if isPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	sortForDeletion(pods, onNode, now)
	return pods[:n]
}

// sortForDeletion orders pods as Kubernetes picks them for deletion, most
// expendable first:
//
//  1. unassigned before assigned to a node;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost annotation first;
//  5. more pods of the owner on the same node (onNode) first;
//  6. of two ready pods, the one ready for a shorter time first;
//  7. more container restarts first;
//  8. newer before older.
//
// In 6 and 8 ages are compared on a log2 scale (as kube-controller-manager's
// LogarithmicScaleDown does): pods of similar age are taken in UID order,
// a pseudo-random one, rather than always the newest.
func sortForDeletion(pods []*corev1.Pod, onNode map[string]int, now time.Time) {
	sort.SliceStable(pods, func(i, j int) bool {
		return deleteBefore(pods[i], pods[j], onNode, now)
	})
}

// deleteBefore reports whether a is to be deleted before b.
func deleteBefore(a, b *corev1.Pod, onNode map[string]int, now time.Time) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder(a.Status.Phase), phaseOrder(b.Status.Phase); pa != pb {
		return pa < pb
	}
	readyA, readyB := controllers.IsPodReady(a), controllers.IsPodReady(b)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if na, nb := onNode[a.Spec.NodeName], onNode[b.Spec.NodeName]; na != nb {
		return na > nb
	}
	if readyA && readyB {
		if ta, tb := controllers.ReadySince(a), controllers.ReadySince(b); !ta.Equal(tb) {
			return newerFirst(a, b, ta, tb, now)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		return newerFirst(a, b, ta, tb, now)
	}
	return false
}

// newerFirst compares two differing times of a and b: a zero time first,
// then the more recent on a log2 scale of age, then by UID.
func newerFirst(a, b *corev1.Pod, ta, tb, now time.Time) bool {
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero()
	}
	if now.IsZero() {
		return ta.After(tb)
	}
	if ra, rb := ageRank(ta, now), ageRank(tb, now); ra != rb {
		return ra < rb
	}
	return a.UID < b.UID
}

// ageRank is floor(log2(age in nanoseconds)), -1 for no age.
func ageRank(t, now time.Time) int {
	d := now.Sub(t)
	if d <= 0 {
		return -1
	}
	return int(math.Log2(float64(d)))
}

func phaseOrder(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0 // Pending, or not reported yet
}

// deletionCost reads the pod-deletion-cost annotation; absent or invalid
// is 0.
func deletionCost(pod *corev1.Pod) int64 {
	v, ok := pod.Annotations[deletionCostAnnotation]
	if !ok {
		return 0
	}
	cost, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return cost
}

// maxRestarts is the highest restart count of the pod's containers,
// sidecars (restartable init containers) included.
func maxRestarts(pod *corev1.Pod) int32 {
	var most int32
	for _, st := range pod.Status.ContainerStatuses {
		most = max(most, st.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if sidecars[st.Name] {
			most = max(most, st.RestartCount)
		}
	}
	return most
}
