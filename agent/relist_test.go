package agent

import (
	"slices"
	"testing"

	"github.com/skiff-lab/skiff/cri"
)

func TestChangedPods(t *testing.T) {
	c := func(uid, id string, state cri.State) cri.Container {
		return cri.Container{ID: id, State: state, Pod: cri.PodRef{UID: uid}}
	}
	before, _ := fingerprints([]cri.Container{c("a", "1", cri.StateRunning), c("b", "2", cri.StateRunning), c("c", "3", cri.StateRunning)})
	after, refs := fingerprints([]cri.Container{c("a", "1", cri.StateRunning), c("b", "2", cri.StateExited), c("d", "4", cri.StateRunning)})
	if got := changedPods(before, after); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Errorf("changed %v, want b (exited), c (gone), d (new)", got)
	}
	if len(refs) != 3 {
		t.Errorf("refs %v", refs)
	}
	if got := changedPods(after, after); len(got) != 0 {
		t.Errorf("no change reported as %v", got)
	}
}
