package controlplane_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// TestServiceTypeChanges changes a Service's type as kubectl does (the
// object read back, the type changed, the rest left): to ExternalName it
// loses its cluster IP, which another Service can then take; back to
// ClusterIP it gets one again; from NodePort to ClusterIP it loses its
// node ports and external traffic policy.
func TestServiceTypeChanges(t *testing.T) {
	_, c := startServer(t)
	ctx := t.Context()
	services := c.CoreV1().Services("default")
	svc, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := svc.Spec.ClusterIP
	svc = retype(t, c, svc, func(s *corev1.ServiceSpec) { s.Type = corev1.ServiceTypeClusterIP })
	if svc.Spec.Ports[0].NodePort != 0 || svc.Spec.ExternalTrafficPolicy != "" || svc.Spec.ClusterIP != ip {
		t.Errorf("NodePort to ClusterIP: nodePort %d, externalTrafficPolicy %q, clusterIP %s (was %s)",
			svc.Spec.Ports[0].NodePort, svc.Spec.ExternalTrafficPolicy, svc.Spec.ClusterIP, ip)
	}
	svc = retype(t, c, svc, func(s *corev1.ServiceSpec) { s.Type, s.ExternalName = corev1.ServiceTypeExternalName, "example.test" })
	if svc.Spec.ClusterIP != "" || len(svc.Spec.ClusterIPs) > 0 {
		t.Errorf("ExternalName keeps cluster IPs %v", svc.Spec.ClusterIPs)
	}
	taker := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "taker"}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := services.Create(ctx, taker, metav1.CreateOptions{}); err != nil {
		t.Errorf("the IP an ExternalName Service gave up: %v", err)
	}
	svc = retype(t, c, svc, func(s *corev1.ServiceSpec) { s.Type, s.ExternalName = corev1.ServiceTypeClusterIP, "" })
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == ip || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ExternalName back to ClusterIP: clusterIP %q, ports %+v", svc.Spec.ClusterIP, svc.Spec.Ports)
	}
}

// retype updates svc with edit applied and returns what the server kept.
func retype(t *testing.T, c kubernetes.Interface, svc *corev1.Service, edit func(*corev1.ServiceSpec)) *corev1.Service {
	t.Helper()
	svc = svc.DeepCopy()
	edit(&svc.Spec)
	out, err := c.CoreV1().Services(svc.Namespace).Update(t.Context(), svc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update to %s: %v", svc.Spec.Type, err)
	}
	return out
}
