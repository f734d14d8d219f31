package agent

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestImageVolume: an image volume is the image's root filesystem,
// mounted read-only in the container; the pod's deletion unmounts it and
// removes its snapshot.
func TestImageVolume(t *testing.T) {
	n := startTestNode(t)
	c := busybox("c", "sh", "-c", "ls /vol/bin/busybox; head -1 /vol/etc/passwd; touch /vol/x 2>/dev/null || echo read-only; sleep 3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "tools", MountPath: "/vol"}}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "imaged"}, Spec: v1.PodSpec{Containers: []v1.Container{c},
		Volumes: []v1.Volume{{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: testImage}}}}}})
	p := n.waitPod("default", "imaged", "running", 60*time.Second, running)
	if pp := p.Spec.Volumes[0].Image.PullPolicy; pp != v1.PullIfNotPresent {
		t.Errorf("pull policy defaulted to %q, want IfNotPresent for a tagged image", pp)
	}
	n.waitLog(pod, "c", "/vol/bin/busybox\nroot:x:0:0:root:/root:/bin/sh\nread-only\n")
	rt := n.runtime()
	if keys, err := rt.ImageVolumes(context.Background(), string(p.UID)); err != nil || len(keys) != 1 {
		t.Errorf("image volume snapshots %v, %v: want one", keys, err)
	}
	n.deleteAndCheckClean(p.Status.PodIP, "imaged")
	if keys, err := rt.ImageVolumes(context.Background(), string(p.UID)); err != nil || len(keys) != 0 {
		t.Errorf("image volume snapshots left: %v, %v", keys, err)
	}
}
