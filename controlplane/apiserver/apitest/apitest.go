// Package apitest holds the fixtures that the unit tests of the API
// server's packages share: field-error comparison and a minimal pod.
package apitest

import (
	"net"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MustCIDR parses s or fails t.
func MustCIDR(t testing.TB, s string) *net.IPNet {
	t.Helper()
	_, cidr, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("parse CIDR %q: %v", s, err)
	}
	return cidr
}

// ErrorFields renders field errors as sorted "path: type" strings, e.g.
// "spec.containers[0].image: Required value", so that tests compare the
// exact paths and kinds of errors and not their wording.
func ErrorFields(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Type.String())
	}
	slices.Sort(out)
	return out
}

// CheckErrorFields fails t unless errs are exactly want (in any order).
func CheckErrorFields(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := ErrorFields(errs)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("errors = %q\nwant     %q\n(full: %v)", got, want, errs)
	}
}

// NewPod is a minimal valid pod before defaults: one container, image
// nginx:1.25, changed by mutate when it is not nil.
func NewPod(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}}}
	pod.Name, pod.Namespace = "web", "default"
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

// BadRequestCase checks err against a case that wants a BadRequest or
// success, failing t otherwise; it reports whether the case wanted the
// error, so that there is nothing more to check.
func BadRequestCase(t *testing.T, err error, wantBadRequest bool) bool {
	t.Helper()
	if wantBadRequest {
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("err = %v, want BadRequest", err)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}
