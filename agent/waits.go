package agent

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// podMemory is what the agent remembers of pods between syncs: why
// containers wait, and when it first saw each pod. Losing it in a restart
// only delays a reason until the next failure.
type podMemory struct {
	mu    sync.Mutex
	waits map[types.UID]map[string]waiting
	seen  map[types.UID]time.Time
}

func newPodMemory() *podMemory {
	return &podMemory{waits: map[types.UID]map[string]waiting{}, seen: map[types.UID]time.Time{}}
}

func (m *podMemory) set(uid types.UID, container string, w waiting) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.waits[uid] == nil {
		m.waits[uid] = map[string]waiting{}
	}
	m.waits[uid][container] = w
}

func (m *podMemory) clear(uid types.UID, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waits[uid], container)
}

func (m *podMemory) get(uid types.UID) map[string]waiting {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.waits[uid])
}

// firstSeen is when the agent first saw the pod (its status.startTime).
func (m *podMemory) firstSeen(uid types.UID, now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.seen[uid]; ok {
		return t
	}
	m.seen[uid] = now
	return now
}

func (m *podMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waits, uid)
	delete(m.seen, uid)
}
