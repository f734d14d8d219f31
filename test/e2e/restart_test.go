package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRestartKeepsEverything stops the server with SIGTERM and then with
// SIGKILL; every object written before survives both, and the server comes
// back with the same CA (the old kubeconfig still works).
func TestRestartKeepsEverything(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	client := c.client()
	const n = 50
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{"restart": "kept"}},
			Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.mustIn(deploymentYAML, "apply", "-f", "-")
	c.must("expose", "deployment", "shop", "--port=80", "--type=NodePort")
	svc, err := client.CoreV1().Services("default").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for _, restart := range []struct {
		name string
		stop func()
	}{{"SIGTERM", c.stop}, {"SIGKILL", c.kill9}} {
		restart.stop()
		c.start()
		list, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "restart=kept"})
		if err != nil {
			t.Fatalf("after %s: %v", restart.name, err)
		}
		if len(list.Items) != n {
			t.Errorf("after %s: %d configmaps, want %d", restart.name, len(list.Items), n)
		}
		got, err := client.CoreV1().Services("default").Get(ctx, "shop", metav1.GetOptions{})
		if err != nil || got.Spec.ClusterIP != svc.Spec.ClusterIP || got.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort {
			t.Errorf("after %s: service %v %+v", restart.name, err, got.Spec)
		}
		if out := c.must("get", "deploy", "shop", "-o", "jsonpath={.spec.replicas}"); out != "2" {
			t.Errorf("after %s: deployment replicas %q", restart.name, out)
		}
	}
	// Allocations survived too: the same ClusterIP cannot be handed out again.
	dup := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: corev1.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, dup, metav1.CreateOptions{}); err == nil {
		t.Error("a ClusterIP was handed out twice after restarts")
	}
}
