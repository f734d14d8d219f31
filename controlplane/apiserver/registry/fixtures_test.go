package registry

import (
	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
)

// Fixtures of the strategies' unit tests.

// testPorts is the NodePort range of the tests' service allocators.
var testPorts = PortRange{Base: 30000, Max: 32767}

// newCreatedPod is apitest.NewPod, changed by mutate, with the create
// defaults applied.
func newCreatedPod(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := apitest.NewPod(mutate)
	PodStrategy{}.PrepareForCreate(pod)
	return pod
}
