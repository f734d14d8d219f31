package replicaset

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlanReplicas(t *testing.T) {
	pods := func(n int) []*corev1.Pod {
		out := make([]*corev1.Pod, n)
		for i := range out {
			out[i] = newPod(fmt.Sprintf("p%03d", i), onNode("n1"), phase(corev1.PodRunning))
		}
		return out
	}
	tests := []struct {
		name       string
		replicas   int
		active     []*corev1.Pod
		wantCreate int
		wantRemove []string
	}{
		{name: "in sync", replicas: 3, active: pods(3)},
		{name: "none wanted, none there", replicas: 0},
		{name: "too few", replicas: 5, active: pods(2), wantCreate: 3},
		{name: "from nothing", replicas: 10, wantCreate: 10},
		{name: "creates capped at burst", replicas: 1200, active: pods(100), wantCreate: burstReplicas},
		{
			name: "too many, expendable first", replicas: 2,
			active:     append(pods(2), newPod("unassigned", phase(corev1.PodRunning)), newPod("pending", onNode("n1"))),
			wantRemove: []string{"unassigned", "pending"},
		},
		{name: "scale to zero", replicas: 0, active: pods(3), wantRemove: []string{"p000", "p001", "p002"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planReplicas(tt.replicas, tt.active, nil, t0)
			if p.create != tt.wantCreate {
				t.Errorf("create = %d, want %d", p.create, tt.wantCreate)
			}
			if got := names(p.remove); !slices.Equal(got, tt.wantRemove) && len(got)+len(tt.wantRemove) > 0 {
				t.Errorf("remove = %v, want %v", got, tt.wantRemove)
			}
		})
	}
	t.Run("deletes capped at burst", func(t *testing.T) {
		if p := planReplicas(1, pods(burstReplicas+50), nil, t0); len(p.remove) != burstReplicas {
			t.Errorf("remove %d pods, want %d", len(p.remove), burstReplicas)
		}
	})
}

func TestPodFromTemplate(t *testing.T) {
	rs := newRS(1)
	rs.Spec.Template.Annotations = map[string]string{"note": "x"}
	rs.Spec.Template.Finalizers = []string{"example.com/keep"}
	pod, err := podFromTemplate(rs, rsKind)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "web-", Namespace: "ns",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "x"},
			Finalizers:  []string{"example.com/keep"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid",
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Spec: rs.Spec.Template.Spec,
	}
	if !equality.Semantic.DeepEqual(pod, want) {
		t.Errorf("pod =\n%+v\nwant\n%+v", pod, want)
	}
	pod.Labels["app"] = "changed"
	pod.Spec.Containers[0].Image = "changed"
	if rs.Spec.Template.Labels["app"] != "web" || rs.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Error("the pod shares memory with the template")
	}

	rs.Spec.Template.Labels = nil
	if _, err := podFromTemplate(rs, rsKind); err == nil {
		t.Error("a template without labels made a pod")
	}
}
