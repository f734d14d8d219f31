package probes

import (
	"context"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Runner runs one probe once; *Prober is the real one. See Prober.Probe for
// the meaning of the results and of an error.
type Runner interface {
	Probe(ctx context.Context, spec *v1.Probe, t Target) (Result, string, error)
}

var _ Runner = (*Prober)(nil)

// ChangeFunc is told when a worker's published result changes because of
// probe runs: readiness Failure→Success and back, liveness Success→Failure,
// startup Unknown→Success or Unknown→Failure. message is the output of the
// run that made the change. Resets caused by Update (a new container, a
// stopped one, a pod being deleted) are not reported: the caller caused them
// and reads Ready/Started afterwards.
//
// It runs on a probe goroutine, never inside Update, Remove or Close, and
// never with the manager's lock held, so it may call back into the Manager
// (except Close). Calls for different probes can run concurrently. It should
// return quickly: hand the news to the pod worker and let it act.
type ChangeFunc func(podUID types.UID, container string, kind Kind, result Result, message string)

// Event is a per-run report like the kubelet's probe events: every failed or
// errored run (Reason "Unhealthy") and every Warning (Reason "ProbeWarning"),
// whether or not it changed the published result.
type Event struct {
	PodUID    types.UID
	Container string
	Kind      Kind
	Reason    string
	Message   string // e.g. "Liveness probe failed: HTTP probe failed with statuscode: 500"
}

// Option configures a Manager.
type Option func(*Manager)

// WithClock sets the clock that times probes (default: the real clock).
func WithClock(c clock.WithDelayedExecution) Option { return func(m *Manager) { m.clock = c } }

// WithEvents sets a function told of every Event, called like ChangeFunc.
func WithEvents(f func(Event)) Option { return func(m *Manager) { m.onEvent = f } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.log = l } }

// maxAttempts is how often a run is tried when the Runner returns an error.
const maxAttempts = 3

// Manager keeps one worker per (pod UID, container, probe kind) of the pods
// it is told about. Each worker holds one timer while a probe is due; the
// probe runs in a short-lived goroutine and no goroutine lives between runs.
// All methods are safe for concurrent use.
type Manager struct {
	runner   Runner
	onChange ChangeFunc
	onEvent  func(Event)
	clock    clock.WithDelayedExecution
	log      *slog.Logger

	mu     sync.Mutex // guards pods and every worker and containerProbes
	pods   map[types.UID]map[string]*containerProbes
	closed bool

	spawnMu     sync.Mutex // orders wg.Add against Close's wg.Wait
	spawnClosed bool
	wg          sync.WaitGroup // probe goroutines
}

// NewManager returns a Manager that runs probes with runner and reports
// changes to onChange (nil: nobody is told).
func NewManager(runner Runner, onChange ChangeFunc, opts ...Option) *Manager {
	m := &Manager{
		runner:   runner,
		onChange: onChange,
		clock:    clock.RealClock{},
		log:      slog.Default(),
		pods:     map[types.UID]map[string]*containerProbes{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// ContainerState is what the caller observed of one container of the pod.
type ContainerState struct {
	Name      string
	ID        string    // runtime ID of the current instance; "" if none exists
	Running   bool      // the instance is running
	StartedAt time.Time // when it started; initialDelaySeconds counts from here
}

// Update tells the manager what the caller observed of pod: its IP and the
// state of its containers. It is idempotent and is meant to be called after
// every sync of the pod. On the first call it creates the workers, one per
// probe of each container and restartable init container (sidecar);
// containers missing from states are taken as not created.
//
// A new container ID resets that container's workers (results back to their
// initial values, thresholds and holds cleared). A container that is not
// running is not probed and is not ready, alive or started (kubelet marks its
// results Failure). Once the pod has a deletionTimestamp its liveness and
// startup results turn Success and those probes stop; readiness goes on.
// Probes start when due: initialDelaySeconds after StartedAt, liveness and
// readiness only after the startup probe (if any) succeeded.
//
// Update never calls ChangeFunc. It does nothing after Close.
func (m *Manager) Update(pod *v1.Pod, podIP string, states []ContainerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	cs, ok := m.pods[pod.UID]
	if !ok {
		cs = newPodProbes(pod)
		m.pods[pod.UID] = cs
	}
	byName := make(map[string]ContainerState, len(states))
	for _, s := range states {
		byName[s.Name] = s
	}
	now := m.clock.Now()
	for name, c := range cs {
		m.observe(c, byName[name], podIP, pod.DeletionTimestamp != nil, now)
	}
}

// newPodProbes makes the workers of every probe of the pod's containers.
func newPodProbes(pod *v1.Pod) map[string]*containerProbes {
	cs := map[string]*containerProbes{}
	add := func(spec *v1.Container) {
		c := &containerProbes{uid: pod.UID, namespace: pod.Namespace, pod: pod.Name, spec: spec.DeepCopy()}
		probed := false
		for k := range numKinds {
			if p := k.of(c.spec); p != nil {
				c.workers[k] = newWorker(c, k, p)
				probed = true
			}
		}
		if probed {
			cs[spec.Name] = c
		}
	}
	for i := range pod.Spec.InitContainers {
		if r := pod.Spec.InitContainers[i].RestartPolicy; r != nil && *r == v1.ContainerRestartPolicyAlways {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return cs
}

// observe applies one container's observed state to its workers and
// (re)schedules them. m.mu is held.
func (m *Manager) observe(c *containerProbes, s ContainerState, podIP string, deleting bool, now time.Time) {
	if s.ID != c.id {
		c.id = s.ID
		for _, w := range c.live() {
			w.reset(now)
		}
	}
	c.podIP, c.running, c.startedAt = podIP, s.Running, s.StartedAt
	switch {
	case c.id != "" && !c.running:
		for _, w := range c.live() {
			w.result, w.message = Failure, "container is not running"
		}
	case deleting:
		for _, k := range []Kind{Liveness, Startup} {
			if w := c.workers[k]; w != nil {
				w.result, w.message = Success, "pod is being deleted"
			}
		}
	}
	c.deleting = deleting
	for _, w := range c.live() {
		m.schedule(w, now)
	}
}

// live returns the container's workers that exist.
func (c *containerProbes) live() []*worker {
	ws := make([]*worker, 0, numKinds)
	for _, w := range c.workers {
		if w != nil {
			ws = append(ws, w)
		}
	}
	return ws
}

// Remove stops the pod's workers: their timers are stopped and runs in
// flight are cancelled and their results dropped. It is idempotent. A
// ChangeFunc call that had already started may still finish after Remove
// returns; none starts later. An Update for the pod after Remove starts it
// over with fresh workers, so call Remove once the pod is done for good.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(uid)
}

func (m *Manager) removeLocked(uid types.UID) {
	for _, c := range m.pods[uid] {
		for _, w := range c.live() {
			w.stopped = true
			w.disarm()
			if w.cancel != nil {
				w.cancel()
			}
		}
	}
	delete(m.pods, uid)
}

// Close removes every pod, then waits for probe goroutines to return. Later
// calls to Update do nothing. It must not be called from ChangeFunc or the
// events function.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for uid := range m.pods {
		m.removeLocked(uid)
	}
	m.mu.Unlock()
	m.spawnMu.Lock()
	m.spawnClosed = true
	m.spawnMu.Unlock()
	m.wg.Wait()
}
