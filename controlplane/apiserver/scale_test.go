package apiserver

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestScaleOf(t *testing.T) {
	s := newTestServer(t)
	res := resourceFor(t, s, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default",
		Labels: map[string]string{"team": "a"}, Finalizers: []string{"x/y"}, ResourceVersion: "42", UID: "uid-1"}}
	res.Strategy.PrepareForCreate(d)
	sc := scaleOf(res, d)
	if sc.Name != "x" || sc.Namespace != "default" || sc.ResourceVersion != "42" || sc.UID != "uid-1" {
		t.Errorf("scale metadata = %+v", sc.ObjectMeta)
	}
	if sc.Labels != nil || sc.Finalizers != nil {
		t.Errorf("scale carries labels %v or finalizers %v", sc.Labels, sc.Finalizers)
	}
	if sc.Spec.Replicas != 1 {
		t.Errorf("scale replicas = %d", sc.Spec.Replicas)
	}
}
