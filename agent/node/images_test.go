package node

import (
	"testing"

	"github.com/skiff-lab/skiff/cri"
)

func TestUnusedImages(t *testing.T) {
	imgs := []cri.Image{{Ref: "pause"}, {Ref: "used"}, {Ref: "old"}, {Ref: "imported", Pinned: true}, {Ref: "older"}}
	containers := []cri.Container{{Image: "used", State: cri.StateExited}}
	got := unusedImages(imgs, containers, "pause")
	if len(got) != 2 || got[0] != "old" || got[1] != "older" {
		t.Errorf("unused %v, want old and older (pause and the pinned image are kept, used has a container)", got)
	}
}
