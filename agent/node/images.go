package node

import (
	"context"
	"log/slog"

	"github.com/skiff-lab/skiff/cri"
)

// CollectImages removes the images no container uses (and not the pause
// image, nor pinned ones) while the node's disk is under pressure.
func (n *Node) CollectImages(ctx context.Context, containers []cri.Container) {
	m, err := readMachine(n.cfg.DataDir)
	if err != nil || !diskPressure(m) {
		return
	}
	imgs, err := n.rt.Images(ctx)
	if err != nil {
		return
	}
	for _, ref := range unusedImages(imgs, containers, n.cfg.PauseImage) {
		if err := n.rt.RemoveImage(ctx, ref); err != nil {
			slog.Warn("remove unused image", "image", ref, "err", err)
			continue
		}
		slog.Info("removed unused image under disk pressure", "image", ref)
	}
}

// unusedImages lists the images no container uses, except keep (the pause
// image) and the pinned ones. It does no I/O.
func unusedImages(imgs []cri.Image, containers []cri.Container, keep string) []string {
	used := map[string]bool{keep: true}
	for _, c := range containers {
		used[c.Image] = true
	}
	var out []string
	for _, img := range imgs {
		if !used[img.Ref] && !img.Pinned {
			out = append(out, img.Ref)
		}
	}
	return out
}
