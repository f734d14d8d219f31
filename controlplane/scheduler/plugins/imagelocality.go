package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// Image size bounds of the ImageLocality score, per container.
const (
	minImageThreshold int64 = 23 << 20
	maxImageThreshold int64 = 1000 << 20
)

const imageSpreadKey = "ImageLocality/spread"

// ImageLocality prefers nodes that already hold the pod's images, the more
// so for big images, and less for images already on many nodes.
type ImageLocality struct{}

var (
	_ framework.PreFilterPlugin = ImageLocality{}
	_ framework.ScorePlugin     = ImageLocality{}
)

func (ImageLocality) Name() string { return "ImageLocality" }

type imageSpread struct {
	images    []string       // the pod's images, normalized
	nodesWith map[string]int // image → nodes holding it
	total     int
}

// PreFilter counts, for each image the pod uses, the nodes that hold it.
func (ImageLocality) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	sp := &imageSpread{nodesWith: map[string]int{}, total: len(nodes)}
	for _, c := range pod.Spec.Containers {
		sp.images = append(sp.images, framework.NormalizeImage(c.Image))
	}
	for _, ni := range nodes {
		if len(ni.Images) == 0 {
			continue
		}
		for _, img := range sp.images {
			if _, ok := ni.Images[img]; ok {
				sp.nodesWith[img]++
			}
		}
	}
	state.Write(imageSpreadKey, sp)
	return nil
}

func (ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	sp := readState[*imageSpread](state, imageSpreadKey)
	if sp == nil || sp.total == 0 || len(ni.Images) == 0 {
		return 0
	}
	var sum int64
	for _, img := range sp.images {
		if size, ok := ni.Images[img]; ok {
			sum += size * int64(sp.nodesWith[img]) / int64(sp.total)
		}
	}
	lo, hi := minImageThreshold, maxImageThreshold*int64(len(pod.Spec.Containers))
	sum = min(max(sum, lo), hi)
	return framework.MaxNodeScore * (sum - lo) / (hi - lo)
}
