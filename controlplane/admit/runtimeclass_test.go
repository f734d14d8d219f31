package admit

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

type fakeRuntimeClasses map[string]*nodev1.RuntimeClass

func (f fakeRuntimeClasses) RuntimeClass(_ context.Context, name string) (*nodev1.RuntimeClass, error) {
	if rc, ok := f[name]; ok {
		return rc, nil
	}
	return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), name)
}

func TestRuntimeClass(t *testing.T) {
	overhead := v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	plugin := NewRuntimeClass(fakeRuntimeClasses{
		"plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"},
		"vm": {ObjectMeta: metav1.ObjectMeta{Name: "vm"}, Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: overhead},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "vm"},
				Tolerations: []v1.Toleration{{Key: "sandbox", Operator: v1.TolerationOpExists}}}},
	})
	admit := func(class string, mutate func(*v1.Pod)) (*v1.Pod, error) {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{RuntimeClassName: &class}}
		if mutate != nil {
			mutate(pod)
		}
		return pod, plugin.Admit(t.Context(), attrs(admission.Create, podsResource, "", "ns", "p", pod, nil, &user.DefaultInfo{Name: "bob"}), nil)
	}
	if pod, err := admit("plain", nil); err != nil || pod.Spec.Overhead != nil || pod.Spec.NodeSelector != nil {
		t.Errorf("class without overhead: %v %+v", err, pod.Spec)
	}
	pod, err := admit("vm", nil)
	if err != nil || !pod.Spec.Overhead.Cpu().Equal(resource.MustParse("250m")) ||
		pod.Spec.NodeSelector["sandbox"] != "vm" || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("class with overhead and scheduling: %v %+v", err, pod.Spec)
	}
	for _, tt := range []struct {
		class  string
		mutate func(*v1.Pod)
		want   string
	}{
		{"nope", nil, `RuntimeClass "nope" not found`},
		{"vm", func(p *v1.Pod) { p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")} }, "doesn't match"},
		{"plain", func(p *v1.Pod) { p.Spec.Overhead = overhead }, "without corresponding RuntimeClass"},
		{"vm", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"sandbox": "none"} }, "conflict"},
	} {
		_, err := admit(tt.class, tt.mutate)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want Forbidden with %q", tt.class, err, tt.want)
		}
	}
}
