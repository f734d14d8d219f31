package chaos

import (
	"errors"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLedger: the ledger agrees with a snapshot of what the API holds: a
// write answered NotFound leaves the object gone with no value (a scale of
// a Deployment an earlier unsure delete removed is no lost write), one
// whose outcome is unknown leaves it unsure.
func TestLedger(t *testing.T) {
	w := &workload{records: map[string]*record{}}
	r := w.record("deployment", "d-4")
	w.settle(r, true, 2, nil)
	w.settle(r, false, 0, errors.New("the server is gone"))
	if !r.unsure {
		t.Fatalf("a delete with no answer: %+v, want unsure", r)
	}
	gone := apierrors.NewNotFound(schema.GroupResource{Group: appsv1.GroupName, Resource: "deployments"}, "d-4")
	w.settle(r, true, 1, gone)
	s := snapshot{deployments: map[string]appsv1.Deployment{}}
	got, want := s.has(r), fmt.Sprintf("%t %d", r.exists, r.value) // as checkWrites compares them
	if r.unsure || got != want || w.acked != 1 || w.failed != 2 {
		t.Errorf("a scale answered NotFound: the ledger has %q (%+v), the snapshot %q; acked %d, failed %d", want, r, got, w.acked, w.failed)
	}
}
