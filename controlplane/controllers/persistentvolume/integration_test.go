package persistentvolume_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/localpath"
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
		volume("scratch", "1Gi", "temp", corev1.PersistentVolumeReclaimDelete), volume("early", "1Gi", "early", ""))
	servertest.Eventually(t, "volumes Available", wait, func(ctx context.Context) (bool, string) {
		return phaseOf(ctx, c, "small") == "Available", phaseOf(ctx, c, "small")
	})
	create(t, c, claim("data", "500Mi", "fast"), claim("lost", "1Gi", "nope"), claim("tmp", "1Gi", "temp"), claim("late", "1Gi", "early"))
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

	servertest.Eventually(t, "early bound", wait, func(ctx context.Context) (bool, string) {
		return phaseOf(ctx, c, "early") == "Bound", phaseOf(ctx, c, "early")
	})
	// A volume deleted while still Bound goes once its claim goes.
	if err := c.CoreV1().PersistentVolumes().Delete(ctx, "early", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

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
		_, err3 := c.CoreV1().PersistentVolumes().Get(ctx, "early", metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && apierrors.IsNotFound(err3), fmt.Sprint(err1, err2, err3)
	})
	if got := phaseOf(ctx, c, "big"); got != "Available" {
		t.Errorf("the bigger volume is %s, want Available", got)
	}
}

// hasEvent says whether obj has an event of reason whose message has msg.
func hasEvent(ctx context.Context, c kubernetes.Interface, obj, reason, msg string) (bool, string) {
	evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", obj).String()})
	if err != nil {
		return false, err.Error()
	}
	for _, e := range evs.Items {
		if e.Reason == reason && strings.Contains(e.Message, msg) {
			return true, ""
		}
	}
	return false, fmt.Sprint(len(evs.Items), " events")
}

// TestWaitForFirstConsumer: a claim of a WaitForFirstConsumer class waits
// until a node is selected for it, then binds only a volume that node
// reaches; with none, a claim of a class with a provisioner names it.
func TestWaitForFirstConsumer(t *testing.T) {
	s := servertest.Start(t)
	c, ctx := s.Client(), t.Context()
	for _, n := range []string{"n1", "n2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{corev1.LabelHostname: n}}}
		if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	for name, provisioner := range map[string]string{"later": "kubernetes.io/no-provisioner", "made": "example.com/made"} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
		if _, err := c.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	onNode := func(pv *corev1.PersistentVolume, node string) *corev1.PersistentVolume {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
		return pv
	}
	create(t, c, onNode(volume("on-n1", "1Gi", "later", ""), "n1"), onNode(volume("on-n2", "2Gi", "later", ""), "n2"),
		claim("wait", "1Gi", "later"), claim("ask", "1Gi", "made"))
	servertest.Eventually(t, "a WaitForFirstConsumer event", wait, func(ctx context.Context) (bool, string) {
		return hasEvent(ctx, c, "wait", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
	})
	for _, name := range []string{"wait", "ask"} {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"n2"}}}`, localpath.AnnSelectedNode)
		if _, err := c.CoreV1().PersistentVolumeClaims("default").Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	servertest.Eventually(t, "wait bound to the volume on n2", wait, func(ctx context.Context) (bool, string) {
		pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "wait", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pvc.Spec.VolumeName == "on-n2" && pvc.Status.Phase == corev1.ClaimBound, pvc.Spec.VolumeName
	})
	servertest.Eventually(t, "ask names its provisioner", wait, func(ctx context.Context) (bool, string) {
		pvc, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, "ask", metav1.GetOptions{})
		if err != nil || pvc.Annotations[localpath.AnnStorageProvisioner] != "example.com/made" {
			return false, fmt.Sprint(err)
		}
		return hasEvent(ctx, c, "ask", "ExternalProvisioning", "external provisioner 'example.com/made'")
	})
}
