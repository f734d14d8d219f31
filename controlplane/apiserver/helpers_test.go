package apiserver

import (
	"net"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Shared fixtures for the unit tests of this package. Nothing here needs
// etcd or the network: servers are built with a nil store and only their
// pure parts (routing, discovery, strategies) are exercised.

// testNodePorts is the NodePort range of test servers.
var testNodePorts = PortRange{Base: 30000, Max: 32767}

// newTestServer builds a Server without a store, over 10.96.0.0/16.
func newTestServer(t testing.TB) *Server {
	t.Helper()
	s, err := New(Config{ServiceCIDR: mustCIDR(t, "10.96.0.0/16"), NodePorts: testNodePorts})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func mustCIDR(t testing.TB, s string) *net.IPNet {
	t.Helper()
	_, cidr, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("parse CIDR %q: %v", s, err)
	}
	return cidr
}

// resourceFor returns the server's resource of group version kind gvk.
func resourceFor(t testing.TB, s *Server, gvk schema.GroupVersionKind) *resource {
	t.Helper()
	for _, r := range s.resources {
		if r.gvk == gvk {
			return r
		}
	}
	t.Fatalf("no resource for %s", gvk)
	return nil
}

// errorFields renders field errors as sorted "path: type" strings, e.g.
// "spec.containers[0].image: Required value", so that tests compare the
// exact paths and kinds of errors and not their wording.
func errorFields(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Type.String())
	}
	slices.Sort(out)
	return out
}

// checkErrorFields fails t unless errs are exactly want (in any order).
func checkErrorFields(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := errorFields(errs)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q\nwant     %q\n(full: %v)", got, want, errs)
	}
}

// newPod is a minimal valid pod before defaults: one container, image
// nginx:1.25.
func newPod() *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}}}
	pod.Name, pod.Namespace = "web", "default"
	return pod
}

// createdPod is newPod, changed by mutate, with the create defaults applied.
func createdPod(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := newPod()
	if mutate != nil {
		mutate(pod)
	}
	podStrategy{}.prepareForCreate(pod)
	return pod
}
