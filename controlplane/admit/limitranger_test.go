package admit

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

type fakeRanges []*v1.LimitRange

func (f fakeRanges) LimitRanges(context.Context, string) ([]*v1.LimitRange, error) { return f, nil }

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestLimitRanger(t *testing.T) {
	ranges := fakeRanges{{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"}, Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{
		{Type: v1.LimitTypeContainer, Default: list("cpu", "500m", "memory", "256Mi"), DefaultRequest: list("cpu", "100m"),
			Min: list("cpu", "50m"), Max: list("cpu", "1", "memory", "1Gi"), MaxLimitRequestRatio: list("cpu", "5")},
		{Type: v1.LimitTypePod, Max: list("memory", "1536Mi")},
	}}}}
	plugin := NewLimitRanger(ranges)
	run := func(cs ...v1.Container) (*v1.Pod, error) {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Containers: cs}}
		a := attrs(admission.Create, podsResource, "", "ns", "p", pod, nil, &user.DefaultInfo{Name: "bob"})
		if err := plugin.Admit(t.Context(), a, nil); err != nil {
			return pod, err
		}
		return pod, plugin.Validate(t.Context(), a, nil)
	}

	pod, err := run(v1.Container{Name: "app"}, v1.Container{Name: "own", Resources: v1.ResourceRequirements{Limits: list("cpu", "200m")}})
	if err != nil {
		t.Fatal(err)
	}
	app, own := pod.Spec.Containers[0].Resources, pod.Spec.Containers[1].Resources
	if app.Limits.Cpu().String() != "500m" || app.Limits.Memory().String() != "256Mi" || app.Requests.Cpu().String() != "100m" ||
		own.Limits.Cpu().String() != "200m" || own.Requests.Cpu().String() != "100m" {
		t.Errorf("defaults: app %v, own %v", app, own)
	}
	if want := "LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app; " +
		"cpu request for container own; memory limit for container own"; pod.Annotations[limitRangerAnnotation] != want {
		t.Errorf("annotation %q, want %q", pod.Annotations[limitRangerAnnotation], want)
	}

	for _, tt := range []struct {
		what string
		c    []v1.Container
		want string
	}{
		{"over max", []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: list("cpu", "1"), Limits: list("cpu", "2")}}},
			`pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"under min", []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: list("cpu", "10m"), Limits: list("cpu", "40m")}}},
			`pods "p" is forbidden: minimum cpu usage per Container is 50m, but request is 10m`},
		{"over the ratio", []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: list("cpu", "100m"), Limits: list("cpu", "1")}}},
			`pods "p" is forbidden: cpu max limit to request ratio per Container is 5, but provided ratio is 10.000000`},
		{"pod over max", []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Limits: list("memory", "1Gi")}},
			{Name: "b", Resources: v1.ResourceRequirements{Limits: list("memory", "1Gi")}}},
			`pods "p" is forbidden: maximum memory usage per Pod is 1536Mi, but limit is 2Gi`},
	} {
		if _, err := run(tt.c...); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.what, err, tt.want)
		}
	}
}
