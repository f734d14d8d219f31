package endpointslice

import (
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/podtrace"
)

// readyEndpoints records, as a step of each pod's journey, the write of
// the EndpointSlices that first made it a ready endpoint of a service.
type readyEndpoints struct {
	tracer podtrace.Tracer
	mu     sync.Mutex
	ready  map[string]map[types.UID]bool // by service key: its ready pods at the last write
}

// written records the step for each of pods that became ready since the
// service's last write (begun at start), and remembers the ready ones.
func (r *readyEndpoints) written(key, service string, pods []*corev1.Pod, start time.Time) {
	now := make(map[types.UID]bool)
	var fresh []*corev1.Pod
	r.mu.Lock()
	before := r.ready[key]
	for _, pod := range pods {
		if controllers.IsPodReady(pod) && pod.DeletionTimestamp == nil {
			now[pod.UID] = true
			if !before[pod.UID] {
				fresh = append(fresh, pod)
			}
		}
	}
	r.ready[key] = now
	r.mu.Unlock()
	end := time.Now()
	for _, pod := range fresh {
		r.tracer.Step(pod, "endpoints.updated", start, end, nil, attribute.String("service", service))
	}
}

// forget drops a deleted service's record.
func (r *readyEndpoints) forget(key string) {
	r.mu.Lock()
	delete(r.ready, key)
	r.mu.Unlock()
}
