package e2e

import (
	"testing"

	"github.com/skiff-lab/skiff/test/images"
	"github.com/skiff-lab/skiff/test/labtest"
)

// lab is a cluster of several nodes on this machine, made by
// test/vm/lab.sh (test/labtest): each node in its network namespace on the
// lab bridge, the agents joined with the server's token, the test image
// imported on every node.
type lab struct {
	*cluster
	*labtest.Lab
}

// startLab brings up a lab that is taken down when the test ends, checking
// that nothing of it is left.
func startLab(t testing.TB, cfg labtest.Config) *lab {
	t.Helper()
	l := newLab(t, cfg)
	l.Up(t)
	l.cluster.kubeconfig = l.Kubeconfig
	return l
}

// newLab prepares a lab (not up yet) that is taken down at the test's end.
func newLab(t testing.TB, cfg labtest.Config) *lab {
	t.Helper()
	tar, err := images.Busybox(e2eImage)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Skiff, cfg.Images = skiffBin, map[string][]byte{"busybox.tar": tar}
	l := labtest.New(t, cfg)
	return &lab{cluster: &cluster{t: t, dataDir: l.Dir}, Lab: l}
}
