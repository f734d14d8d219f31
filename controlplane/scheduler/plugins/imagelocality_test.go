package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                     "docker.io/library/nginx:latest",
		"nginx:1.27":                "docker.io/library/nginx:1.27",
		"user/app":                  "docker.io/user/app:latest",
		"registry.local:5000/x/y:2": "registry.local:5000/x/y:2",
		"localhost/app":             "localhost/app:latest",
		"busybox@sha256:abc":        "docker.io/library/busybox@sha256:abc",
	} {
		if got := framework.NormalizeImage(in); got != want {
			t.Errorf("NormalizeImage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestImageLocalityPrefersNodesHoldingBigImages(t *testing.T) {
	withImage := func(name string, size int64) *framework.NodeInfo {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if size > 0 {
			n.Status.Images = []corev1.ContainerImage{{Names: []string{"docker.io/library/big:1"}, SizeBytes: size}}
		}
		return framework.NewNodeInfo(n)
	}
	nodes := []*framework.NodeInfo{withImage("has", 800<<20), withImage("small", 10<<20), withImage("none", 0)}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "big:1"}}}}
	state := framework.NewCycleState()
	if st := (ImageLocality{}).PreFilter(context.Background(), state, pod, nodes); st != nil {
		t.Fatal(st)
	}
	scores := make([]int64, len(nodes))
	for i, ni := range nodes {
		scores[i] = ImageLocality{}.Score(context.Background(), state, pod, ni)
	}
	// 800Mi held by 2 of 3 nodes counts 533.3Mi: (533.3-23)/(1000-23) of 100, rounded down.
	if scores[0] != 52 || scores[1] != 0 || scores[2] != 0 {
		t.Errorf("scores %v, want [52 0 0]", scores)
	}
}
