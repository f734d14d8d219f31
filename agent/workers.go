package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/informer"
)

// podWorkers serializes work per pod: the queue hands a pod's UID to one
// worker at a time, and the worker syncs the newest version of the pod the
// informer delivered. UIDs the API no longer has are cleaned up as orphans.
type podWorkers struct {
	queue  workqueue.TypedRateLimitingInterface[types.UID]
	starts *startTraces

	mu      sync.Mutex
	pods    map[types.UID]*v1.Pod
	orphans map[types.UID]cri.PodRef
	failed  map[types.UID]string // the last failed sync's error, until a sync succeeds
}

func newPodWorkers() *podWorkers {
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](500*time.Millisecond, 5*time.Minute)
	return &podWorkers{
		queue:   workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "agent_pods"}),
		starts:  newStartTraces(),
		pods:    map[types.UID]*v1.Pod{},
		orphans: map[types.UID]cri.PodRef{},
		failed:  map[types.UID]string{},
	}
}

// handlers feed the workers from a pod informer.
func (w *podWorkers) handlers() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.update(obj) },
		UpdateFunc: func(_, obj any) { w.update(obj) },
		DeleteFunc: func(obj any) {
			if pod, ok := informer.FromTombstone[*v1.Pod](obj); ok {
				w.mu.Lock()
				delete(w.pods, pod.UID)
				w.orphans[pod.UID] = cri.PodRef{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name}
				w.mu.Unlock()
				w.queue.Add(pod.UID)
			}
		},
	}
}

func (w *podWorkers) update(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	w.starts.seen(pod)
	w.mu.Lock()
	w.pods[pod.UID] = pod
	w.mu.Unlock()
	w.queue.Add(pod.UID)
}

// all lists the pods the informer delivered for this node.
func (w *podWorkers) all() []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*v1.Pod, 0, len(w.pods))
	for _, p := range w.pods {
		out = append(out, p)
	}
	return out
}

// adoptOrphans queues every pod the runtime has but the API does not.
func (w *podWorkers) adoptOrphans(refs []cri.PodRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ref := range refs {
		uid := types.UID(ref.UID)
		if _, ok := w.pods[uid]; !ok {
			w.orphans[uid] = ref
			w.queue.Add(uid)
		}
	}
}

// enqueueAll queues every known pod (the periodic relist).
func (w *podWorkers) enqueueAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid := range w.pods {
		w.queue.Add(uid)
	}
}

func (w *podWorkers) lookup(uid types.UID) (*v1.Pod, cri.PodRef, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if pod, ok := w.pods[uid]; ok {
		return pod, cri.PodRef{}, true
	}
	return nil, w.orphans[uid], false
}

// run processes the queue with n workers until ctx ends.
func (a *Agent) runWorkers(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	a.pods.queue.ShutDown()
	wg.Wait()
}

func (a *Agent) processNext(ctx context.Context) bool {
	uid, quit := a.pods.queue.Get()
	if quit {
		return false
	}
	defer a.pods.queue.Done(uid)
	pod, orphan, ok := a.pods.lookup(uid)
	var err error
	var again time.Duration
	if ok {
		again, err = a.syncPod(ctx, pod)
	} else if orphan.UID != "" {
		if err = a.cleanupOrphan(ctx, orphan); err == nil {
			a.pods.mu.Lock()
			delete(a.pods.orphans, uid)
			a.pods.mu.Unlock()
		}
	}
	if err != nil && ctx.Err() == nil {
		if n, log := a.pods.fail(uid, err); log {
			slog.Warn("sync pod", "uid", uid, "err", err, "failures", n)
		}
		a.pods.queue.AddRateLimited(uid)
		return true
	}
	a.pods.succeeded(uid)
	if again > 0 {
		a.pods.queue.AddAfter(uid, again)
	}
	return true
}

// fail records a failed sync of uid: its failures in a row, this one
// counted, and whether to log it: a new error at once, a repeated one only
// as the failures double, the steps of the queue's back-off, not at every
// sync an event brings in between.
func (w *podWorkers) fail(uid types.UID, err error) (n int, log bool) {
	n = w.queue.NumRequeues(uid) + 1
	w.mu.Lock()
	defer w.mu.Unlock()
	repeated := w.failed[uid] == err.Error()
	w.failed[uid] = err.Error()
	return n, !repeated || n&(n-1) == 0
}

// succeeded forgets uid's failures.
func (w *podWorkers) succeeded(uid types.UID) {
	w.queue.Forget(uid)
	w.mu.Lock()
	delete(w.failed, uid)
	w.mu.Unlock()
}

// named finds a pod of this node by namespace and name.
func (w *podWorkers) named(namespace, name string) (*v1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, pod := range w.pods {
		if pod.Namespace == namespace && pod.Name == name {
			return pod, true
		}
	}
	return nil, false
}
