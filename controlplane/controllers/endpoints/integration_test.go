package endpoints_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	pollStep    = 100 * time.Millisecond
	pollTimeout = 20 * time.Second
)

// TestEndpointsFollowPods runs the controller in a real control plane. No
// agent runs there, so the test plays the kubelet: it sets the pods' IPs
// and readiness through pods/status.
func TestEndpointsFollowPods(t *testing.T) {
	c := servertest.Start(t).Client()
	ctx := t.Context()
	const ns = "shop"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, ready := range []bool{true, true, false} {
		runPod(t, c, ns, fmt.Sprintf("web-%d", i), fmt.Sprintf("10.244.0.%d", i+1), ready)
	}

	ep := waitForEndpoints(t, c, ns, []string{"10.244.0.1", "10.244.0.2"}, []string{"10.244.0.3"})
	if got := ep.Subsets[0].Ports; len(got) != 1 || got[0].Name != "http" || got[0].Port != 8080 {
		t.Errorf("ports %+v, want http → 8080", got)
	}
	ref := ep.Subsets[0].Addresses[0].TargetRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != "web-0" || ref.Namespace != ns || ref.UID == "" {
		t.Errorf("targetRef %+v", ref)
	}
	if ep.Labels["tier"] != "front" || ep.Labels["endpoints.kubernetes.io/managed-by"] != "endpoint-controller" {
		t.Errorf("labels %v", ep.Labels)
	}

	servertest.SetPodRunning(t, c, ns, "web-0", "", false)
	waitForEndpoints(t, c, ns, []string{"10.244.0.2"}, []string{"10.244.0.1", "10.244.0.3"})

	if err := c.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "Endpoints deleted with their Service", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	api, err := c.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(api.Subsets) != 1 || api.Labels["endpoints.kubernetes.io/managed-by"] != "" {
		t.Errorf("default/kubernetes Endpoints touched: %v %+v", err, api)
	}
}

// runPod creates a pod with a container port named http and gives it ip
// and readiness, as an agent would.
func runPod(t *testing.T, c kubernetes.Interface, ns, name, ip string, ready bool) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.SetPodRunning(t, c, ns, name, ip, ready)
}

// waitForEndpoints waits until the Endpoints web in ns has exactly one
// subset with these ready and not-ready IPs, in this order.
func waitForEndpoints(t *testing.T, c kubernetes.Interface, ns string, ready, notReady []string) *corev1.Endpoints {
	t.Helper()
	var ep *corev1.Endpoints
	poll(t, fmt.Sprintf("Endpoints with ready %v, not ready %v", ready, notReady), func(ctx context.Context) (bool, error) {
		var err error
		ep, err = c.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 {
			return false, nil
		}
		return slices.Equal(ips(ep.Subsets[0].Addresses), ready) && slices.Equal(ips(ep.Subsets[0].NotReadyAddresses), notReady), nil
	})
	return ep
}

func ips(addrs []corev1.EndpointAddress) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	return out
}

func poll(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), pollStep, pollTimeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
