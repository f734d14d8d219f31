package cri_test

import (
	"context"
	"os"
	"testing"
)

// TestImportedImagesArePinned: images imported from a tarball are pinned,
// so that image garbage collection on a full disk leaves them.
func TestImportedImagesArePinned(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and real containerd and runc (not -short)")
	}
	n := startExecNode(t)
	imgs, err := n.rt.Images(context.Background())
	if err != nil || len(imgs) != 2 {
		t.Fatalf("images %v, %v: want the pause and busybox images", imgs, err)
	}
	for _, img := range imgs {
		if !img.Pinned {
			t.Errorf("%s is not pinned", img.Ref)
		}
	}
}
