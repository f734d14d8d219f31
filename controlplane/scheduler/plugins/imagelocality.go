package plugins

import (
	"context"
	"strings"

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
	nodesWith map[string]int // normalized image name → nodes holding it
	total     int
}

// PreFilter counts, for each image the pod uses, the nodes that hold it.
func (ImageLocality) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	want := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		want[NormalizeImage(c.Image)] = true
	}
	sp := &imageSpread{nodesWith: map[string]int{}, total: len(nodes)}
	for _, ni := range nodes {
		for _, img := range ni.Node.Status.Images {
			for _, name := range img.Names {
				if want[NormalizeImage(name)] {
					sp.nodesWith[NormalizeImage(name)]++
					break
				}
			}
		}
	}
	state.Write(imageSpreadKey, sp)
	return nil
}

func (ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) int64 {
	v, _ := state.Read(imageSpreadKey)
	sp, _ := v.(*imageSpread)
	if sp == nil || sp.total == 0 {
		return 0
	}
	sizes := map[string]int64{}
	for _, img := range ni.Node.Status.Images {
		for _, name := range img.Names {
			sizes[NormalizeImage(name)] = img.SizeBytes
		}
	}
	var sum int64
	for _, c := range pod.Spec.Containers {
		name := NormalizeImage(c.Image)
		if size, ok := sizes[name]; ok {
			sum += size * int64(sp.nodesWith[name]) / int64(sp.total)
		}
	}
	lo, hi := minImageThreshold, maxImageThreshold*int64(len(pod.Spec.Containers))
	sum = min(max(sum, lo), hi)
	return framework.MaxNodeScore * (sum - lo) / (hi - lo)
}

// NormalizeImage names an image as a runtime reports it: nginx becomes
// docker.io/library/nginx:latest.
func NormalizeImage(image string) string {
	name := image
	if i := strings.IndexByte(name, '/'); i < 0 {
		name = "docker.io/library/" + name
	} else if first := name[:i]; !strings.ContainsAny(first, ".:") && first != "localhost" {
		name = "docker.io/" + name
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	if !strings.Contains(last, ":") && !strings.Contains(name, "@") {
		name += ":latest"
	}
	return name
}
