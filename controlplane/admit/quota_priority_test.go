package admit

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// fakeQuotas keeps quotas in memory; a status update bumps nothing but
// the stored copy.
type fakeQuotas struct{ quotas []*v1.ResourceQuota }

func (f *fakeQuotas) ResourceQuotas(context.Context, string, bool) ([]*v1.ResourceQuota, error) {
	return f.quotas, nil
}

func (f *fakeQuotas) UpdateQuotaStatus(_ context.Context, q *v1.ResourceQuota) error {
	for i, cur := range f.quotas {
		if cur.Name == q.Name {
			f.quotas[i] = q
		}
	}
	return nil
}

func TestResourceQuota(t *testing.T) {
	hard := list("pods", "2", "requests.cpu", "1")
	quotas := &fakeQuotas{quotas: []*v1.ResourceQuota{
		{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}, Spec: v1.ResourceQuotaSpec{Hard: hard},
			Status: v1.ResourceQuotaStatus{Hard: hard, Used: list("pods", "1", "requests.cpu", "600m")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns"}, Spec: v1.ResourceQuotaSpec{Hard: list("configmaps", "1")}},
	}}
	plugin := NewResourceQuota(quotas)
	create := func(obj any) error {
		var a admission.Attributes
		switch o := obj.(type) {
		case *v1.Pod:
			a = attrs(admission.Create, podsResource, "", "ns", o.Name, o, nil, &user.DefaultInfo{Name: "bob"})
		case *v1.ConfigMap:
			a = attrs(admission.Create, v1.Resource("configmaps"), "", "ns", o.Name, o, nil, &user.DefaultInfo{Name: "bob"})
		}
		return plugin.Validate(t.Context(), a, nil)
	}
	cpu := func(q string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "c", Resources: v1.ResourceRequirements{Requests: list("cpu", q)}}}}}
	}
	for _, tt := range []struct {
		what string
		obj  any
		want string
	}{
		{"over requests.cpu", cpu("500m"), `pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1`},
		{"no cpu request", &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
			`pods "p" is forbidden: failed quota: q: must specify requests.cpu`},
		{"within", cpu("400m"), ""},
		{"then the pods are used up", cpu("1m"), `pods "p" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=1m, used: pods=2,requests.cpu=1, limited: pods=2,requests.cpu=1`},
		{"a quota not yet counted", &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}},
			`configmaps "cm" is forbidden: status unknown for quota: new, resources: configmaps`},
	} {
		err := create(tt.obj)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("%s: %v, want %q", tt.what, err, tt.want)
		}
	}
	if used := quotas.quotas[0].Status.Used; used.Pods().String() != "2" || used.Name("requests.cpu", "").String() != "1" {
		t.Errorf("charged %v", used)
	}
}

type fakeClasses []*schedulingv1.PriorityClass

func (f fakeClasses) PriorityClass(_ context.Context, name string) (*schedulingv1.PriorityClass, error) {
	for _, c := range f {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, apierrors.NewNotFound(schedulingv1.Resource("priorityclasses"), name)
}

func (f fakeClasses) PriorityClasses() ([]*schedulingv1.PriorityClass, error) { return f, nil }

func TestPriority(t *testing.T) {
	never := v1.PreemptNever
	classes := fakeClasses{
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: &never},
		{ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 10, GlobalDefault: true},
	}
	plugin := NewPriority(classes)
	admit := func(class string, priority *int32) (*v1.Pod, error) {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{PriorityClassName: class, Priority: priority}}
		return pod, plugin.Admit(t.Context(), attrs(admission.Create, podsResource, "", "ns", "p", pod, nil, &user.DefaultInfo{Name: "bob"}), nil)
	}
	if pod, err := admit("high", nil); err != nil || *pod.Spec.Priority != 1000 || *pod.Spec.PreemptionPolicy != v1.PreemptNever {
		t.Errorf("class high: %v %+v", err, pod.Spec)
	}
	if pod, err := admit("", nil); err != nil || *pod.Spec.Priority != 10 || pod.Spec.PriorityClassName != "normal" {
		t.Errorf("no class: %v %+v", err, pod.Spec)
	}
	if _, err := admit("nope", nil); err == nil || err.Error() != `pods "p" is forbidden: no PriorityClass with name nope was found` {
		t.Errorf("unknown class: %v", err)
	}
	five := int32(5)
	if _, err := admit("high", &five); err == nil || err.Error() != `pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name` {
		t.Errorf("a priority of its own: %v", err)
	}
	other := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 1, GlobalDefault: true}
	err := plugin.Validate(t.Context(), attrs(admission.Create, priorityClassesResource, "", "", "other", other, nil, &user.DefaultInfo{Name: "bob"}), nil)
	if err == nil || err.Error() != `priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass normal is already marked as default. Only one default can exist` {
		t.Errorf("a second default: %v", err)
	}
}
