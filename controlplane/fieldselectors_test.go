package controlplane_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestFieldSelectorsOfKubeAPIServer: the field selectors kube-apiserver
// supports for Services (spec.clusterIP, spec.type: upstream kube-proxy
// lists with spec.clusterIP!=None), ReplicaSets and ReplicationControllers
// (status.replicas) select here too.
func TestFieldSelectorsOfKubeAPIServer(t *testing.T) {
	_, c := startServer(t)
	ctx := t.Context()
	port := []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "headless"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "np"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: port}},
	} {
		if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "x"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	if _, err := c.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc"},
		Spec: corev1.ReplicationControllerSpec{Selector: labels, Template: &tmpl}}
	if _, err := c.CoreV1().ReplicationControllers("default").Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		selector string
		list     func(metav1.ListOptions) (int, error)
		want     int
	}{
		{"spec.clusterIP!=None", func(o metav1.ListOptions) (int, error) {
			l, err := c.CoreV1().Services("default").List(ctx, o)
			return len(l.Items), err
		}, 3}, // web, np and the kubernetes Service
		{"spec.type=NodePort", func(o metav1.ListOptions) (int, error) {
			l, err := c.CoreV1().Services("").List(ctx, o)
			return len(l.Items), err
		}, 1},
		{"status.replicas=0", func(o metav1.ListOptions) (int, error) {
			l, err := c.AppsV1().ReplicaSets("default").List(ctx, o)
			return len(l.Items), err
		}, 1},
		{"status.replicas!=0", func(o metav1.ListOptions) (int, error) {
			l, err := c.CoreV1().ReplicationControllers("default").List(ctx, o)
			return len(l.Items), err
		}, 0},
	} {
		got, err := tc.list(metav1.ListOptions{FieldSelector: tc.selector})
		if err != nil || got != tc.want {
			t.Errorf("%s: %d items, %v; want %d", tc.selector, got, err, tc.want)
		}
	}
}
