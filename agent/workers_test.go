package agent

import (
	"errors"
	"slices"
	"testing"
)

// TestRepeatedSyncErrorsLoggedPerBackOffStep: a pod's sync failing the
// same way is logged at failures 1, 2, 4, 8…, a new error at once, and
// after a success the count starts again.
func TestRepeatedSyncErrorsLoggedPerBackOffStep(t *testing.T) {
	w := newPodWorkers()
	defer w.queue.ShutDown()
	var logged []int
	failWith := func(msg string) {
		if n, log := w.fail("u", errors.New(msg)); log {
			logged = append(logged, n)
		}
		w.queue.AddRateLimited("u")
	}
	for range 9 {
		failWith("image not present")
	}
	failWith("no space left on device")
	w.succeeded("u")
	failWith("no space left on device")
	if want := []int{1, 2, 4, 8, 10, 1}; !slices.Equal(logged, want) {
		t.Errorf("logged at failures %v, want %v", logged, want)
	}
}
