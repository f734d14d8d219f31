package probes

import "k8s.io/apimachinery/pkg/types"

// Ready reports the readiness probe's published result for the container's
// current instance (the one last given to Update): false until the probe has
// succeeded successThreshold times in a row, and false again after
// failureThreshold failures, a restart or a stop.
//
// ok is false when the manager has no readiness worker for the container
// (no readinessProbe, or a pod it was not told about). Readiness is then the
// caller's decision; the kubelet's rule is ready = running && started.
func (m *Manager) Ready(uid types.UID, container string) (ready, ok bool) {
	r, ok := m.Result(uid, container, Readiness)
	return r == Success, ok
}

// Started reports whether the container's startup probe has succeeded for
// its current instance. ok is false when the manager has no startup worker
// for the container (no startupProbe, or a pod it was not told about); the
// kubelet's rule is then started = running.
func (m *Manager) Started(uid types.UID, container string) (started, ok bool) {
	r, ok := m.Result(uid, container, Startup)
	return r == Success, ok
}

// Result returns the published result of one probe of the container, and
// false when the manager has no such worker.
func (m *Manager) Result(uid types.UID, container string, kind Kind) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.pods[uid][container]
	if !ok || kind < 0 || kind >= numKinds || c.workers[kind] == nil {
		return Unknown, false
	}
	return c.workers[kind].result, true
}
