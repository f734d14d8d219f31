package persistentvolume_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const wait = 30 * time.Second

func volume(name, size, class string, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
		PersistentVolumeReclaimPolicy: policy,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}}}
}

func claim(name, size, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(class),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
}

func create(t *testing.T, c kubernetes.Interface, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.PersistentVolume:
			_, err = c.CoreV1().PersistentVolumes().Create(t.Context(), o, metav1.CreateOptions{})
		case *corev1.PersistentVolumeClaim:
			_, err = c.CoreV1().PersistentVolumeClaims("default").Create(t.Context(), o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = c.CoreV1().Pods("default").Create(t.Context(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func phaseOf(ctx context.Context, c kubernetes.Interface, pv string) string {
	got, err := c.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return string(got.Status.Phase)
}

// TestBindingAndReclaim: a claim binds the smallest free volume of its
// class that fits; a claim of a class that does not exist waits with an
// event naming it; a claim a pod uses outlives its deletion until the
// pod goes; a volume whose claim went is Released and kept, or deleted.
func TestBindingAndReclaim(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	create(t, c, volume("big", "5Gi", "fast", ""), volume("small", "1Gi", "fast", ""), volume("slow", "1Gi", "slow", ""),
		volume("scratch", "1Gi", "temp", corev1.PersistentVolumeReclaimDelete))
	servertest.Eventually(t, "volumes Available", wait, func(ctx context.Context) (bool, string) {
		return phaseOf(ctx, c, "small") == "Available", phaseOf(ctx, c, "small")
	})
	create(t, c, claim("data", "500Mi", "fast"), claim("lost", "1Gi", "nope"), claim("tmp", "1Gi", "temp"))
	servertest.Eventually(t, "data bound to small", wait, func(ctx context.Context) (bool, string) {
		pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		size := pvc.Status.Capacity[corev1.ResourceStorage]
		return pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName == "small" && size.String() == "1Gi" && phaseOf(ctx, c, "small") == "Bound",
			fmt.Sprintf("%s on %q (%s), volume %s", pvc.Status.Phase, pvc.Spec.VolumeName, size.String(), phaseOf(ctx, c, "small"))
	})
	servertest.Eventually(t, "an event naming the missing class", wait, func(ctx context.Context) (bool, string) {
		evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "lost").String()})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "ProvisioningFailed" && e.Message == `storageclass.storage.k8s.io "nope" not found` {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(evs.Items), " events")
	})

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	create(t, c, pod)
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the protection controller has had its chance
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{}); err != nil {
		t.Fatalf("a claim in use went: %v", err)
	}
	if err := c.CoreV1().Pods("default").Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "claim gone, its volume Released and kept", wait, func(ctx context.Context) (bool, string) {
		_, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && phaseOf(ctx, c, "small") == "Released", fmt.Sprint(err, " ", phaseOf(ctx, c, "small"))
	})
	if err := c.CoreV1().PersistentVolumes().Delete(ctx, "small", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "tmp", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "the deleted volume and the Delete volume gone", wait, func(ctx context.Context) (bool, string) {
		_, err1 := c.CoreV1().PersistentVolumes().Get(ctx, "small", metav1.GetOptions{})
		_, err2 := c.CoreV1().PersistentVolumes().Get(ctx, "scratch", metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2), fmt.Sprint(err1, err2)
	})
	if got := phaseOf(ctx, c, "big"); got != "Available" {
		t.Errorf("the bigger volume is %s, want Available", got)
	}
}
