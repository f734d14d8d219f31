package servicelb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// addNode registers a Ready node with ip, as its agent would (again on a
// conflict: the node lifecycle controller writes new nodes too).
func addNode(t *testing.T, c kubernetes.Interface, name, ip string) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = c.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitIngress(t *testing.T, c kubernetes.Interface, name, want string) {
	t.Helper()
	servertest.Eventually(t, fmt.Sprintf("%s ingress %q", name, want), 20*time.Second, func(ctx context.Context) (bool, string) {
		svc, err := c.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := ""
		for _, in := range svc.Status.LoadBalancer.Ingress {
			got += in.IP + " "
		}
		return got == want, got
	})
}

func TestLoadBalancerIngress(t *testing.T) {
	c := servertest.Start(t).Client()
	ctx := t.Context()
	addNode(t, c, "node-b", "192.0.2.12")
	addNode(t, c, "node-a", "192.0.2.11")
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := c.CoreV1().Services("default").Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, c, "web", "192.0.2.11 192.0.2.12 ")

	local := lb.DeepCopy()
	local.Name, local.Spec.ExternalTrafficPolicy = "local", corev1.ServiceExternalTrafficPolicyLocal
	if _, err := c.CoreV1().Services("default").Create(ctx, local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "local-x", Labels: map[string]string{discovery.LabelServiceName: "local"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: new("node-b")}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, c, "local", "192.0.2.12 ")

	svc, err := c.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type = corev1.ServiceTypeNodePort
	if _, err := c.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, c, "web", "")
}
