package apiserver

import (
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// storedPod is a pod as the store holds it: server metadata set, running.
func storedPod() *corev1.Pod {
	pod := createdPod(nil)
	pod.UID, pod.ResourceVersion, pod.Generation = "uid-1", "7", 1
	pod.CreationTimestamp = metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	pod.Status.Phase = corev1.PodRunning
	return pod
}

func TestKeepServerMeta(t *testing.T) {
	cur := storedPod()
	pod := cur.DeepCopy()
	pod.Name, pod.Namespace, pod.UID, pod.ResourceVersion, pod.Generation = "other", "other", "uid-2", "3", 9
	pod.CreationTimestamp, pod.SelfLink = metav1.Now(), "/x"
	pod.DeletionTimestamp = &pod.CreationTimestamp
	pod.Labels = map[string]string{"kept": "yes"}
	keepServerMeta(&pod.ObjectMeta, &cur.ObjectMeta)
	if pod.Name != "web" || pod.Namespace != "default" || pod.UID != "uid-1" || pod.ResourceVersion != "7" || pod.Generation != 1 ||
		!pod.CreationTimestamp.Equal(&cur.CreationTimestamp) || pod.DeletionTimestamp != nil || pod.SelfLink != "" {
		t.Errorf("server metadata not restored: %+v", pod.ObjectMeta)
	}
	if pod.Labels["kept"] != "yes" {
		t.Errorf("labels = %v, want the client's", pod.Labels)
	}
}

func TestKeepAllBut(t *testing.T) {
	tests := []struct {
		name      string
		field     string
		wantPhase corev1.PodPhase
		wantImage string
	}{
		{"status subresource takes only status", "Status", corev1.PodSucceeded, "nginx:1.25"},
		{"finalize takes only spec", "Spec", corev1.PodRunning, "nginx:2"},
		{"unknown field takes nothing", "Nothing", corev1.PodRunning, "nginx:1.25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := storedPod()
			obj := cur.DeepCopy()
			obj.Status.Phase, obj.Spec.Containers[0].Image = corev1.PodSucceeded, "nginx:2"
			obj.Labels, obj.ResourceVersion = map[string]string{"new": "label"}, "6"
			keepAllBut(obj, cur, tt.field)
			if obj.Status.Phase != tt.wantPhase || obj.Spec.Containers[0].Image != tt.wantImage {
				t.Errorf("phase %s image %s, want %s %s", obj.Status.Phase, obj.Spec.Containers[0].Image, tt.wantPhase, tt.wantImage)
			}
			if obj.Labels != nil || obj.ResourceVersion != "6" {
				t.Errorf("labels %v resourceVersion %s, want stored labels and the request's resourceVersion", obj.Labels, obj.ResourceVersion)
			}
		})
	}
}

func TestCopyAndEqualField(t *testing.T) {
	cur := storedPod()
	obj := cur.DeepCopy()
	obj.Status.Phase = corev1.PodFailed
	if registry.EqualField(obj, cur, "Status") {
		t.Error("equalField(Status) = true for different phases")
	}
	copyField(obj, cur, "Status")
	if obj.Status.Phase != corev1.PodRunning || !registry.EqualField(obj, cur, "Status") {
		t.Errorf("copyField(Status) left phase %s", obj.Status.Phase)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "1"}}
	copyField(cm, &corev1.ConfigMap{}, "Status") // no such field: nothing happens
	if !registry.EqualField(cm, &corev1.ConfigMap{}, "Spec") || cm.Data["a"] != "1" {
		t.Errorf("fields a ConfigMap lacks changed it: %+v", cm)
	}
}

func TestCheckIdentity(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	tests := []struct {
		name, objName, objNS string
		ok                   bool
	}{
		{"same", "web", "default", true},
		{"namespace left empty", "web", "", true},
		{"other name", "db", "default", false},
		{"other namespace", "web", "prod", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := apitest.NewPod(nil)
			pod.Name, pod.Namespace = tt.objName, tt.objNS
			err := checkIdentity(request{res: pods, namespace: "default", name: "web"}, pod)
			if (err == nil) != tt.ok || (err != nil && !apierrors.IsBadRequest(err)) {
				t.Errorf("checkIdentity = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestGeneratedNameStaysShort(t *testing.T) {
	long := strings.Repeat("a", 80) + "-"
	if got := generatedName(long); len(got) != 63 {
		t.Errorf("generated name %q has %d characters, want 63", got, len(got))
	}
	if got := generatedName("web-"); len(got) != 9 || got[:4] != "web-" {
		t.Errorf("generated name %q", got)
	}
}
