package statefulset

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ss, err := c.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := controllers.ClaimPods(ctx, c.client, c.pods, c.owners, ss, ss.Spec.Selector, "statefulset",
		func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().StatefulSets(ss.Namespace).Get(ctx, ss.Name, metav1.GetOptions{})
		})
	if err != nil {
		return err
	}
	revs, err := c.history.Owned(ss)
	if err != nil {
		return err
	}
	cur, upd, err := c.revisions(ctx, ss, revs)
	if err != nil {
		return err
	}
	s, err := newState(ss, pods, cur, upd, c.now())
	if err != nil {
		return err
	}
	var actErr error
	if ss.DeletionTimestamp == nil && c.expectations.Satisfied(key) {
		actErr = c.carryOut(ctx, s, s.plan())
	}
	if wait := s.nextAvailable(); wait > 0 {
		c.queue.AddAfter(key, wait)
	}
	if err := c.writeStatus(ctx, ss, s.status()); err != nil {
		return errors.Join(actErr, err)
	}
	return errors.Join(actErr, c.pruneHistory(ctx, s, revs, pods))
}

// revisions finds or makes the revision of the set's template (the
// update revision, newest of all) and finds the revision its pods are
// current at (status.currentRevision; the update revision at first).
func (c *Controller) revisions(ctx context.Context, ss *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (cur, upd *appsv1.ControllerRevision, err error) {
	data, err := controllers.TemplatePatch(&ss.Spec.Template)
	if err != nil {
		return nil, nil, err
	}
	hash := controllers.TemplateHash(&ss.Spec.Template, ss.Status.CollisionCount)
	upd, err = c.history.Record(ctx, ss, revs, &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: ss.Name + "-" + hash,
			Labels:          controllers.WithLabel(ss.Spec.Template.Labels, controllers.HashLabel, hash),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ss, setKind)}},
		Data: runtime.RawExtension{Raw: data},
	})
	if errors.Is(err, controllers.ErrRevisionNameTaken) {
		collisions := ptr.Deref(ss.Status.CollisionCount, 0) + 1
		err = errors.Join(err, c.writeStatus(ctx, ss, withCollisionCount(ss.Status, collisions)))
	}
	if err != nil {
		return nil, nil, err
	}
	for _, r := range revs {
		if r.Name == ss.Status.CurrentRevision {
			return r, upd, nil
		}
	}
	return upd, upd, nil
}

func withCollisionCount(st appsv1.StatefulSetStatus, n int32) appsv1.StatefulSetStatus {
	st.CollisionCount = &n
	return st
}

// pruneHistory drops the oldest revisions beyond revisionHistoryLimit
// that are neither current nor the update and that no pod runs.
func (c *Controller) pruneHistory(ctx context.Context, s *state, revs []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	live := sets.New(s.cur.Name, s.upd.Name)
	for _, p := range pods {
		live.Insert(p.Labels[controllers.HashLabel])
	}
	return c.history.Prune(ctx, revs, live, int(ptr.Deref(s.ss.Spec.RevisionHistoryLimit, 10)))
}

// state is one sync's view of a StatefulSet.
type state struct {
	ss               *appsv1.StatefulSet
	cur, upd         *appsv1.ControllerRevision
	curTmpl, updTmpl *corev1.PodTemplateSpec
	start            int
	replicas         []*corev1.Pod // by ordinal from start; nil where missing
	condemned        []*corev1.Pod // beyond the range, highest ordinal first
	firstUnavailable *corev1.Pod
	now              time.Time
}

func newState(ss *appsv1.StatefulSet, pods []*corev1.Pod, cur, upd *appsv1.ControllerRevision, now time.Time) (*state, error) {
	curTmpl, err := controllers.TemplateOf(cur)
	if err != nil {
		return nil, err
	}
	updTmpl, err := controllers.TemplateOf(upd)
	if err != nil {
		return nil, err
	}
	s := &state{ss: ss, cur: cur, upd: upd, curTmpl: curTmpl, updTmpl: updTmpl, now: now,
		replicas: make([]*corev1.Pod, ptr.Deref(ss.Spec.Replicas, 1))}
	if ss.Spec.Ordinals != nil {
		s.start = int(ss.Spec.Ordinals.Start)
	}
	for _, p := range pods {
		switch ord := ordinalOf(ss, p); {
		case ord < 0:
		case ord >= s.start && ord < s.start+len(s.replicas):
			s.replicas[ord-s.start] = p
		default:
			s.condemned = append(s.condemned, p)
		}
	}
	slices.SortFunc(s.condemned, func(a, b *corev1.Pod) int { return ordinalOf(ss, b) - ordinalOf(ss, a) })
	for _, p := range s.replicas {
		if s.firstUnavailable == nil && s.unavailable(p) {
			s.firstUnavailable = p
		}
	}
	for i := len(s.condemned) - 1; i >= 0 && s.firstUnavailable == nil; i-- {
		if s.unavailable(s.condemned[i]) {
			s.firstUnavailable = s.condemned[i]
		}
	}
	return s, nil
}

// ordinalOf is the ordinal in a pod's name <set>-<ordinal>; -1 for a pod
// named otherwise.
func ordinalOf(ss *appsv1.StatefulSet, pod *corev1.Pod) int {
	rest, ok := strings.CutPrefix(pod.Name, ss.Name+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

func terminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func runningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && controllers.IsPodReady(p)
}

func (s *state) available(p *corev1.Pod) bool {
	return runningAndReady(p) && controllers.IsPodAvailable(p, s.ss.Spec.MinReadySeconds, s.now)
}

// unavailable: missing, going, or not available.
func (s *state) unavailable(p *corev1.Pod) bool {
	return p == nil || terminating(p) || !s.available(p)
}

func (s *state) monotonic() bool {
	return s.ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
}

// plan is what one sync does.
type plan struct {
	create  []int         // ordinals of pods to make, with their claims
	claims  []int         // ordinals of pending pods whose claims to make
	relabel []*corev1.Pod // pods whose identity labels to set right
	release []*corev1.Pod // condemned pods whose claims go with them
	delete  []*corev1.Pod
}

// plan decides, as Kubernetes' StatefulSet control does, what to do
// next: make missing pods and replace ended ones, then remove the
// condemned, then roll the update. With OrderedReady it stops at the
// first pod that is not running and available, and does one thing.
func (s *state) plan() plan {
	var p plan
	mono := s.monotonic()
	for i, pod := range s.replicas {
		ord := s.start + i
		switch {
		case pod == nil:
			p.create = append(p.create, ord)
			if mono {
				return p
			}
			continue
		case terminal(pod):
			if !terminating(pod) {
				p.delete = append(p.delete, pod)
			}
			if mono {
				return p
			}
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			p.claims = append(p.claims, ord)
		}
		if mono && (terminating(pod) || !s.available(pod)) {
			return p
		}
		if !s.identityMatches(pod, ord) {
			p.relabel = append(p.relabel, pod)
		}
	}
	if s.ss.Spec.PersistentVolumeClaimRetentionPolicy != nil &&
		s.ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		p.release = s.condemned
	}
	for _, pod := range s.condemned {
		switch {
		case terminating(pod):
			if mono {
				return p
			}
			continue
		case mono && !s.available(pod) && pod != s.firstUnavailable:
			return p
		}
		p.delete = append(p.delete, pod)
		if mono {
			return p
		}
	}
	if s.ss.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return p
	}
	p.delete = append(p.delete, s.outdated()...)
	return p
}

// outdated are the pods a RollingUpdate replaces now: from the highest
// ordinal down to the partition, as many as maxUnavailable allows beside
// the pods already unavailable.
func (s *state) outdated() []*corev1.Pod {
	partition, maxUnavailable := 0, 1
	if ru := s.ss.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = int(ptr.Deref(ru.Partition, 0))
		if ru.MaxUnavailable != nil {
			n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, len(s.replicas), false)
			if err == nil {
				maxUnavailable = max(n, 1)
			}
		}
	}
	unavailable := 0
	for _, pod := range s.replicas {
		if s.unavailable(pod) {
			unavailable++
		}
	}
	var out []*corev1.Pod
	for i := len(s.replicas) - 1; i >= partition && len(out) < maxUnavailable-unavailable; i-- {
		if pod := s.replicas[i]; pod.Labels[controllers.HashLabel] != s.upd.Name && !terminating(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// status is the set's status as its pods show it.
func (s *state) status() appsv1.StatefulSetStatus {
	st := appsv1.StatefulSetStatus{ObservedGeneration: s.ss.Generation, CurrentRevision: s.cur.Name, UpdateRevision: s.upd.Name,
		CollisionCount: ptr.To(ptr.Deref(s.ss.Status.CollisionCount, 0)), Conditions: s.ss.Status.Conditions}
	for _, pod := range append(slices.Clone(s.replicas), s.condemned...) {
		if pod == nil || pod.Status.Phase == "" {
			continue
		}
		st.Replicas++
		if runningAndReady(pod) {
			st.ReadyReplicas++
			if s.available(pod) {
				st.AvailableReplicas++
			}
		}
		if rev := pod.Labels[controllers.HashLabel]; !terminating(pod) {
			if rev == s.cur.Name {
				st.CurrentReplicas++
			}
			if rev == s.upd.Name {
				st.UpdatedReplicas++
			}
		}
	}
	if s.ss.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentReplicas, st.CurrentRevision = st.UpdatedReplicas, st.UpdateRevision
	}
	return st
}

// nextAvailable is how long until the first ready pod becomes available;
// 0 when none waits for minReadySeconds.
func (s *state) nextAvailable() time.Duration {
	var next time.Duration
	for _, pod := range append(slices.Clone(s.replicas), s.condemned...) {
		if pod == nil {
			continue
		}
		if at, ok := controllers.AvailableAt(pod, s.ss.Spec.MinReadySeconds); ok && at.After(s.now) {
			if d := at.Sub(s.now); next == 0 || d < next {
				next = d
			}
		}
	}
	return next
}

func (c *Controller) writeStatus(ctx context.Context, ss *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	if apiequality.Semantic.DeepEqual(st, ss.Status) {
		return nil
	}
	w := controllers.StatusWriter[*appsv1.StatefulSet]{Noun: "statefulset",
		Get: func(ctx context.Context, ns, name string, o metav1.GetOptions) (*appsv1.StatefulSet, error) {
			return c.client.AppsV1().StatefulSets(ns).Get(ctx, name, o)
		},
		Update: func(ctx context.Context, ss *appsv1.StatefulSet, o metav1.UpdateOptions) (*appsv1.StatefulSet, error) {
			return c.client.AppsV1().StatefulSets(ss.Namespace).UpdateStatus(ctx, ss, o)
		}}
	// Conditions are others' to set (the controller writes none): the
	// latest are kept.
	return w.Write(ctx, ss, func(ss *appsv1.StatefulSet) {
		conditions := ss.Status.Conditions
		ss.Status = st
		ss.Status.Conditions = conditions
	})
}
