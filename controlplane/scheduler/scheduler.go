// Package scheduler assigns pods to nodes: it watches unscheduled pods,
// filters the nodes that can run one, scores those, and binds the pod to
// the best through pods/binding — the List-Watch, filter, score, bind
// steps of the pod creation flow.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/scheduler/plugins"
	"github.com/skiff-lab/skiff/informer"
	"github.com/skiff-lab/skiff/podtrace"
)

// Name is the scheduler's name: it schedules pods whose schedulerName is
// this, and reports events as it.
const Name = corev1.DefaultSchedulerName

// Scheduler is the scheduling loop. It is a component.Component.
type Scheduler struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	queue    *Queue
	cache    *Cache
	decider  *decider
	recorder record.EventRecorder
	tracer   podtrace.Tracer
	bound    atomic.Int64
	// handlersSynced reports whether the informers' handlers have been
	// given every object of the initial lists.
	handlersSynced []cache.InformerSynced
}

// Bound counts the pods this scheduler has bound.
func (s *Scheduler) Bound() int64 { return s.bound.Load() }

var _ component.Component = (*Scheduler)(nil)

// New returns a scheduler constructor with the given configuration.
func New(cfg Config) component.Constructor {
	return func(cc component.Context) (component.Component, error) {
		core, storage := cc.Informers.Core().V1(), cc.Informers.Storage().V1()
		volumes := &plugins.VolumeBinding{Client: cc.Client, Claims: core.PersistentVolumeClaims().Lister(),
			Volumes: core.PersistentVolumes().Lister(), Classes: storage.StorageClasses().Lister()}
		profile, err := NewProfile(cfg, volumes)
		if err != nil {
			return nil, err
		}
		registerMetrics()
		s := &Scheduler{
			client:   cc.Client,
			queue:    NewQueue(clock.RealClock{}),
			cache:    NewCache(),
			decider:  &decider{profile: profile},
			recorder: cc.Recorder(Name),
			tracer:   podtrace.NewTracer(cc.Tracing, "scheduler", ""),
		}
		podInformer := cc.Informers.Core().V1().Pods()
		s.pods = podInformer.Lister()
		podReg, err := podInformer.Informer().AddEventHandler(s.podHandler())
		if err != nil {
			return nil, err
		}
		nodeReg, err := cc.Informers.Core().V1().Nodes().Informer().AddEventHandler(s.nodeHandler())
		if err != nil {
			return nil, err
		}
		s.handlersSynced = []cache.InformerSynced{podReg.HasSynced, nodeReg.HasSynced}
		// A claim bound, a volume made or a class added may let a pod fit.
		retry := informer.OnChange(func(any) { s.queue.MoveAllToActive() })
		for name, inf := range map[string]cache.SharedIndexInformer{"persistentvolumeclaim": core.PersistentVolumeClaims().Informer(),
			"persistentvolume": core.PersistentVolumes().Informer(), "storageclass": storage.StorageClasses().Informer()} {
			reg, err := inf.AddEventHandler(retry)
			if err != nil {
				return nil, fmt.Errorf("%s handler: %w", name, err)
			}
			s.handlersSynced = append(s.handlersSynced, reg.HasSynced)
		}
		return s, nil
	}
}

// specChanged reports whether an update changed more than the pod's status
// (a change of status alone, such as the scheduler's own PodScheduled
// condition, does not make a pod fit anywhere new).
func specChanged(old, pod *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, pod.Spec) || !equality.Semantic.DeepEqual(old.Labels, pod.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, pod.Annotations) || old.DeletionTimestamp != pod.DeletionTimestamp ||
		old.Status.Phase != pod.Status.Phase
}

// wantsScheduling: unbound, ours, not finished, not being deleted.
func wantsScheduling(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.Spec.SchedulerName == Name && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func (s *Scheduler) podHandler() cache.ResourceEventHandlerFuncs {
	set := func(pod *corev1.Pod) {
		switch {
		case pod.Spec.NodeName != "":
			s.queue.Delete(pod)
			s.cache.SetPod(pod)
		case wantsScheduling(pod):
			s.queue.Add(pod)
		default:
			s.queue.Delete(pod)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { set(obj.(*corev1.Pod)) },
		UpdateFunc: func(old, obj any) {
			if pod := obj.(*corev1.Pod); pod.Spec.NodeName != "" || specChanged(old.(*corev1.Pod), pod) {
				set(pod)
			}
		},
		DeleteFunc: func(obj any) {
			pod, ok := informer.FromTombstone[*corev1.Pod](obj)
			if !ok {
				return
			}
			s.queue.Delete(pod)
			if pod.Spec.NodeName != "" {
				s.cache.RemovePod(pod.UID)
				s.queue.MoveAllToActive() // room freed
			}
		},
	}
}

func (s *Scheduler) nodeHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.cache.SetNode(obj.(*corev1.Node))
			s.queue.MoveAllToActive()
		},
		UpdateFunc: func(_, obj any) {
			s.cache.SetNode(obj.(*corev1.Node))
			s.queue.MoveAllToActive()
		},
		DeleteFunc: func(obj any) {
			if node, ok := informer.FromTombstone[*corev1.Node](obj); ok {
				s.cache.RemoveNode(node.Name)
			}
		},
	}
}

// Run schedules pods one at a time until ctx ends; bindings run in the
// background. It starts once its cache holds every node and pod of the
// informers' first lists, so that no pod is judged against a partial
// cluster (as kube-scheduler waits for its handlers to sync).
func (s *Scheduler) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), s.handlersSynced...) {
		return
	}
	go func() {
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				s.queue.Flush()
				s.queue.report()
			}
		}
	}()
	for {
		a, ok := s.queue.Pop(ctx)
		if !ok {
			return
		}
		s.scheduleOne(ctx, a)
	}
}

// attempt is one try at scheduling a pod: which try it is, the queue's
// cluster-event count when it began (for Requeue), when the pod became
// active in the queue, when the try began, and when it decided.
type attempt struct {
	pod           *corev1.Pod
	attempts      int
	cycle         int64
	queued, start time.Time
	decided       time.Time
}

// ended counts the attempt by its result and times it.
func (a attempt) ended(result string) {
	scheduleAttempts.WithLabelValues(result, Name).Inc()
	attemptDuration.WithLabelValues(result, Name).Observe(time.Since(a.start).Seconds())
}

// scheduleOne decides a node for the attempt's pod and binds it there.
func (s *Scheduler) scheduleOne(ctx context.Context, a attempt) {
	current, err := s.pods.Pods(a.pod.Namespace).Get(a.pod.Name)
	if err != nil || current.UID != a.pod.UID || !wantsScheduling(current) {
		s.queue.Done(a.pod)
		return
	}
	a.pod = current
	var dec decision
	s.cache.Read(func(snap Snapshot) { dec, err = s.decider.decide(ctx, current, snap) })
	a.decided = time.Now()
	var fe *FitError
	if errors.As(err, &fe) {
		var p preemption
		var ok bool
		s.cache.Read(func(snap Snapshot) { p, ok = s.decider.preempt(ctx, current, snap) })
		if ok {
			s.evict(ctx, current, p)
		}
	}
	if err != nil {
		s.traceFailure(a, err)
		s.unschedulable(ctx, a, err)
		return
	}
	s.traceDecision(a, dec)
	s.cache.Assume(current, dec.node)
	go s.bind(ctx, a, dec.node)
}

// bind runs the PreBind plugins, then binds the attempt's pod to node
// through pods/binding.
func (s *Scheduler) bind(ctx context.Context, a attempt, node string) {
	pod := a.pod
	for _, p := range s.decider.profile.PreBinds {
		if err := p.PreBind(ctx, pod, node); err != nil {
			s.bindFailed(ctx, a, node, fmt.Sprintf("running PreBind plugin %q: %v", p.Name(), err))
			return
		}
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) { // the pod is gone
		s.cache.Forget(pod)
		s.queue.Done(pod)
		return
	}
	if err != nil {
		s.bindFailed(ctx, a, node, fmt.Sprintf("Binding rejected: %v", err))
		return
	}
	s.traceBind(a, node, nil)
	s.queue.Done(pod)
	s.bound.Add(1)
	a.ended(resultScheduled)
	s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
}

// bindFailed undoes the assumption that the pod is on node and, unless the
// scheduler is stopping, says why in an event and queues the pod again.
func (s *Scheduler) bindFailed(ctx context.Context, a attempt, node string, why string) {
	pod := a.pod
	s.cache.Forget(pod)
	if ctx.Err() != nil {
		s.queue.Done(pod)
		return
	}
	a.ended(resultError)
	s.traceBind(a, node, errors.New(why))
	slog.Warn("binding failed", "pod", pod.Name, "namespace", pod.Namespace, "node", node, "err", why)
	s.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", why)
	s.queue.Requeue(pod, a.attempts, a.cycle, false)
}

// unschedulable records why the pod fits nowhere: a FailedScheduling
// event, the PodScheduled=False condition, and back to the queue.
func (s *Scheduler) unschedulable(ctx context.Context, a attempt, err error) {
	pod := a.pod
	var fe *FitError
	isFit := errors.As(err, &fe)
	if isFit {
		a.ended(resultUnschedulable)
	} else {
		a.ended(resultError)
	}
	s.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", err.Error())
	if perr := s.setUnschedulable(ctx, pod, err.Error()); perr != nil && ctx.Err() == nil {
		slog.Warn("set PodScheduled condition", "pod", pod.Name, "namespace", pod.Namespace, "err", perr)
	}
	s.queue.Requeue(pod, a.attempts, a.cycle, isFit)
}

func (s *Scheduler) setUnschedulable(ctx context.Context, pod *corev1.Pod, message string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message == message {
			return nil
		}
	}
	condition := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: message, LastTransitionTime: metav1.Now()}
	return s.patchStatus(ctx, pod, map[string]any{"conditions": []corev1.PodCondition{condition}})
}
