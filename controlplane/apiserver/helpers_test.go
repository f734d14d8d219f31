package apiserver

import (
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Shared fixtures for the unit tests of this package. Nothing here needs
// etcd or the network: servers are built with a nil store and only their
// pure parts (routing, discovery, strategies) are exercised.

// testNodePorts is the NodePort range of test servers.
var testNodePorts = registry.PortRange{Base: 30000, Max: 32767}

// newTestServer builds a Server without a store, over 10.96.0.0/16.
func newTestServer(t testing.TB) *Server {
	t.Helper()
	s, err := New(Config{ServiceCIDR: apitest.MustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// resourceFor returns the server's resource of group version kind gvk.
func resourceFor(t testing.TB, s *Server, gvk schema.GroupVersionKind) *registry.Resource {
	t.Helper()
	for _, r := range s.resources {
		if r.GVK == gvk {
			return r
		}
	}
	t.Fatalf("no resource for %s", gvk)
	return nil
}

// createdPod is newPod, changed by mutate, with the create defaults applied.
func createdPod(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := apitest.NewPod(mutate)
	registry.PodStrategy{}.PrepareForCreate(pod)
	return pod
}
