package daemonset

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := c.daemonSets.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, ds)
	if err != nil || ds.DeletionTimestamp != nil {
		return err
	}
	hash, err := c.currentRevision(ctx, ds, pods)
	if err != nil {
		return err
	}
	nodes, err := c.nodes.List(everything)
	if err != nil {
		return err
	}
	now := c.now()
	s := newState(ds, nodes, pods, hash, now)
	if c.expectations.Satisfied(key) {
		if err := c.carryOut(ctx, ds, s.plan(), hash); err != nil {
			return err
		}
	}
	if wait := s.nextAvailable(); wait > 0 {
		c.queue.AddAfter(key, wait)
	}
	return c.writeStatus(ctx, ds, s.status())
}

// claimPods adopts and releases pods so that the DaemonSet owns exactly
// those its selector matches.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	return controllers.ClaimPods(ctx, c.client, c.pods, c.owners, ds, ds.Spec.Selector, "daemonset", func(ctx context.Context) (metav1.Object, error) {
		return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	})
}

// nodeState is one node as a DaemonSet sees it.
type nodeState struct {
	name      string
	run, keep bool
	live      []*corev1.Pod // not being deleted, not failed, oldest first
	failed    []*corev1.Pod
}

// state is one sync's view of a DaemonSet.
type state struct {
	ds     *appsv1.DaemonSet
	hash   string
	now    time.Time
	nodes  []nodeState
	strays []*corev1.Pod // pinned to nodes that are gone
}

func newState(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string, now time.Time) *state {
	s := &state{ds: ds, hash: hash, now: now}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			byNode[nodeOf(p)] = append(byNode[nodeOf(p)], p)
		}
	}
	for _, n := range nodes {
		ns := nodeState{name: n.Name}
		ns.run, ns.keep = placement(ds, n)
		for _, p := range byNode[n.Name] {
			if p.Status.Phase == corev1.PodFailed {
				ns.failed = append(ns.failed, p)
			} else {
				ns.live = append(ns.live, p)
			}
		}
		slices.SortFunc(ns.live, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		delete(byNode, n.Name)
		s.nodes = append(s.nodes, ns)
	}
	for _, ps := range byNode {
		s.strays = append(s.strays, ps...)
	}
	return s
}

// plan is what one sync does: create a pod on these nodes, delete these
// pods.
type plan struct {
	create []string
	remove []*corev1.Pod
}

// plan puts a pod on each node that should run one, takes them off the
// others (and their extras and failed ones), and, with nothing else to
// do, rolls out the current revision.
func (s *state) plan() plan {
	p := plan{remove: s.strays}
	surge := s.maxSurge() > 0
	for _, n := range s.nodes {
		p.remove = append(p.remove, n.failed...)
		switch {
		case !n.keep:
			p.remove = append(p.remove, n.live...)
		case n.run && len(n.live) == 0 && len(n.failed) == 0:
			p.create = append(p.create, n.name)
		case len(n.live) > 2 || len(n.live) == 2 && !(surge && s.oldAndNew(n)):
			p.remove = append(p.remove, n.live[1:]...)
		}
	}
	if len(p.create)+len(p.remove) > 0 || s.ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return p
	}
	if surge {
		return s.surgeRollout()
	}
	return s.rollout()
}

func (s *state) oldAndNew(n nodeState) bool {
	return s.isNew(n.live[0]) != s.isNew(n.live[1])
}

func (s *state) isNew(p *corev1.Pod) bool { return p.Labels[hashLabel] == s.hash }

func (s *state) available(p *corev1.Pod) bool {
	at, ok := controllers.AvailableAt(p, s.ds.Spec.MinReadySeconds)
	return ok && !s.now.Before(at)
}

func (s *state) scaled(v *intstr.IntOrString) int {
	desired := 0
	for _, n := range s.nodes {
		if n.run {
			desired++
		}
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, desired, true)
	if err != nil {
		return 0
	}
	return n
}

func (s *state) maxSurge() int {
	if ru := s.ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
		return s.scaled(ru.MaxSurge)
	}
	return 0
}

// rollout deletes old pods, the unavailable ones at once and the others
// while no more than maxUnavailable nodes lack an available pod; their
// nodes get the new pod on the next sync.
func (s *state) rollout() plan {
	var p plan
	unavailable := 0
	var oldAvailable []*corev1.Pod
	for _, n := range s.nodes {
		if !n.run {
			continue
		}
		if len(n.live) == 0 || !s.available(n.live[0]) {
			unavailable++
		}
		for _, pod := range n.live {
			switch {
			case s.isNew(pod):
			case !s.available(pod):
				p.remove = append(p.remove, pod)
			default:
				oldAvailable = append(oldAvailable, pod)
			}
		}
	}
	budget := s.scaled(s.ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable) - unavailable
	p.remove = append(p.remove, oldAvailable[:max(0, min(budget, len(oldAvailable)))]...)
	return p
}

// surgeRollout starts the new pod beside an available old one on up to
// maxSurge nodes at a time, and deletes the old pod once the new one is
// available (at once when the old one is not).
func (s *state) surgeRollout() plan {
	var p plan
	surging := 0
	var waiting []string
	for _, n := range s.nodes {
		if !n.run || len(n.live) == 0 {
			continue
		}
		var old, cur *corev1.Pod
		for _, pod := range n.live {
			if s.isNew(pod) {
				cur = pod
			} else {
				old = pod
			}
		}
		switch {
		case old == nil:
		case cur != nil && s.available(cur), !s.available(old):
			p.remove = append(p.remove, old)
		case cur != nil:
			surging++
		default:
			waiting = append(waiting, n.name)
		}
	}
	p.create = waiting[:max(0, min(s.maxSurge()-surging, len(waiting)))]
	return p
}

// nextAvailable is how long until a ready pod becomes available, to sync
// again then; zero when none waits.
func (s *state) nextAvailable() time.Duration {
	var next time.Duration
	for _, n := range s.nodes {
		for _, p := range n.live {
			if at, ok := controllers.AvailableAt(p, s.ds.Spec.MinReadySeconds); ok && at.After(s.now) {
				if d := at.Sub(s.now); next == 0 || d < next {
					next = d
				}
			}
		}
	}
	return next
}

// status counts the DaemonSet's nodes as Kubernetes reports them.
func (s *state) status() appsv1.DaemonSetStatus {
	st := appsv1.DaemonSetStatus{ObservedGeneration: s.ds.Generation, CollisionCount: s.ds.Status.CollisionCount,
		Conditions: s.ds.Status.Conditions}
	for _, n := range s.nodes {
		switch {
		case n.run:
			st.DesiredNumberScheduled++
		case len(n.live) > 0:
			st.NumberMisscheduled++
		}
		if !n.run || len(n.live) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		pod := n.live[0]
		if controllers.IsPodReady(pod) {
			st.NumberReady++
		}
		if s.available(pod) {
			st.NumberAvailable++
		}
		if slices.ContainsFunc(n.live, s.isNew) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st
}

// carryOut creates and deletes what p says, recording expectations.
func (c *Controller) carryOut(ctx context.Context, ds *appsv1.DaemonSet, p plan, hash string) error {
	key := keyOf(ds.Namespace, ds.Name)
	if len(p.remove) > 0 {
		return c.deletePods(ctx, ds, p.remove)
	}
	if len(p.create) == 0 {
		return nil
	}
	c.expectations.ExpectCreations(key, len(p.create))
	created, err := controllers.SlowStartBatch(len(p.create), 1, func(i int) error {
		pod, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, podFor(ds, p.create[i], hash), metav1.CreateOptions{})
		if err != nil {
			c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			return fmt.Errorf("create pod on node %s: %w", p.create[i], err)
		}
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
		return nil
	})
	if skipped := len(p.create) - created; skipped > 0 {
		c.expectations.LowerCreations(key, skipped)
	}
	return err
}

func (c *Controller) deletePods(ctx context.Context, ds *appsv1.DaemonSet, pods []*corev1.Pod) error {
	d := controllers.PodDeleter{Client: c.client, Recorder: c.recorder, Expectations: c.expectations}
	return d.Delete(ctx, ds, keyOf(ds.Namespace, ds.Name), pods)
}

func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus) error {
	if apiequality.Semantic.DeepEqual(st, ds.Status) {
		return nil
	}
	w := controllers.StatusWriter[*appsv1.DaemonSet]{Noun: "daemonset",
		Get: func(ctx context.Context, ns, name string, o metav1.GetOptions) (*appsv1.DaemonSet, error) {
			return c.client.AppsV1().DaemonSets(ns).Get(ctx, name, o)
		},
		Update: func(ctx context.Context, ds *appsv1.DaemonSet, o metav1.UpdateOptions) (*appsv1.DaemonSet, error) {
			return c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, o)
		}}
	return w.Write(ctx, ds, func(ds *appsv1.DaemonSet) { ds.Status = st })
}
