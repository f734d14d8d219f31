package endpointslice_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	ns      = "shop"
	timeout = 20 * time.Second
	zone    = "zone-a"
	node    = "node-1"
)

// TestSlicesFollowPods runs the controller in a real control plane. No
// agent runs there, so the test plays the kubelet: it binds the pods to a
// node it made and sets their IPs and readiness through pods/status.
func TestSlicesFollowPods(t *testing.T) {
	c := servertest.Start(t).Client()
	ctx := t.Context()
	create(t, c.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(t, c.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Labels: map[string]string{corev1.LabelTopologyZone: zone}}})
	svc := create(t, c.CoreV1().Services(ns).Create, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	})
	for i, ready := range []bool{true, true, false} {
		runPod(t, c, fmt.Sprintf("web-%d", i), fmt.Sprintf("10.244.0.%d", i+1), ready)
	}

	got := waitForSlices(t, c, "web-0 and web-1 ready, web-2 not", func(eps []discovery.Endpoint) bool {
		return conditions(eps) == "web-0:ready,serving web-1:ready,serving web-2:-"
	})[0]
	checkSlice(t, got, svc)

	servertest.SetPodRunning(t, c, ns, "web-0", "", false)
	waitForSlices(t, c, "web-0 not ready", func(eps []discovery.Endpoint) bool {
		return conditions(eps) == "web-0:- web-1:ready,serving web-2:-"
	})

	// A deleted pod bound to a node waits for that node's agent, which
	// does not run here: it stays, terminating.
	if err := c.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, c, "web-1 terminating", func(eps []discovery.Endpoint) bool {
		return conditions(eps) == "web-0:- web-1:serving,terminating web-2:-"
	})

	if err := c.DiscoveryV1().EndpointSlices(ns).Delete(ctx, got.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, c, "a slice deleted by hand written again", func(eps []discovery.Endpoint) bool {
		return conditions(eps) == "web-0:- web-1:serving,terminating web-2:-"
	})

	if err := c.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, c, "slices collected with their Service", nil)
}

// TestSlicesHoldAHundred checks that a service with more endpoints than a
// slice holds gets several slices, none over 100 endpoints.
func TestSlicesHoldAHundred(t *testing.T) {
	cfg := servertest.Start(t).RESTConfig()
	cfg.QPS = -1 // 260 requests to set the pods up, not a client's pace
	c := kubernetes.NewForConfigOrDie(cfg)
	create(t, c.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(t, c.CoreV1().Nodes().Create, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	create(t, c.CoreV1().Services(ns).Create, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80}}},
	})
	const pods = 130
	for i := range pods {
		runPod(t, c, fmt.Sprintf("web-%d", i), fmt.Sprintf("10.244.%d.%d", i/200, i%200+1), true)
	}
	servertest.Eventually(t, "130 endpoints in slices of at most 100", timeout, func(ctx context.Context) (bool, string) {
		list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discovery.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		var sizes []int
		total := 0
		for _, s := range list.Items {
			sizes = append(sizes, len(s.Endpoints))
			total += len(s.Endpoints)
		}
		return total == pods && slices.Max(append(sizes, 0)) <= 100, fmt.Sprint(sizes)
	})
}

func create[T any](t *testing.T, f func(context.Context, T, metav1.CreateOptions) (T, error), obj T) T {
	t.Helper()
	out, err := f(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runPod creates a pod bound to node with a container port named http and
// gives it ip and readiness, as an agent would.
func runPod(t *testing.T, c kubernetes.Interface, name, ip string, ready bool) {
	t.Helper()
	create(t, c.CoreV1().Pods(ns).Create, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	})
	servertest.SetPodRunning(t, c, ns, name, ip, ready)
}

// waitForSlices waits until the service web has exactly one slice whose
// endpoints satisfy ok, or none at all when ok is nil.
func waitForSlices(t *testing.T, c kubernetes.Interface, what string, ok func([]discovery.Endpoint) bool) []discovery.EndpointSlice {
	t.Helper()
	var items []discovery.EndpointSlice
	servertest.Eventually(t, what, timeout, func(ctx context.Context) (bool, string) {
		list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discovery.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		items = list.Items
		if ok == nil || len(items) != 1 {
			return ok == nil && len(items) == 0, fmt.Sprintf("%d slices", len(items))
		}
		return ok(items[0].Endpoints), conditions(items[0].Endpoints)
	})
	return items
}

// conditions describes endpoints as "pod:conditions" sorted by pod, the
// conditions that are true joined by commas ("-" for none).
func conditions(eps []discovery.Endpoint) string {
	var out []string
	for _, ep := range eps {
		var set []string
		for _, c := range []struct {
			name string
			v    *bool
		}{{"ready", ep.Conditions.Ready}, {"serving", ep.Conditions.Serving}, {"terminating", ep.Conditions.Terminating}} {
			if c.v != nil && *c.v {
				set = append(set, c.name)
			}
		}
		if len(set) == 0 {
			set = []string{"-"}
		}
		out = append(out, ep.TargetRef.Name+":"+strings.Join(set, ","))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// checkSlice checks what the controller writes besides the conditions:
// labels, owner, address type, ports by name and each endpoint's address,
// node, zone and pod reference.
func checkSlice(t *testing.T, s discovery.EndpointSlice, svc *corev1.Service) {
	t.Helper()
	if s.Labels[discovery.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.Labels["tier"] != "front" {
		t.Errorf("labels %v", s.Labels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID || s.OwnerReferences[0].Controller == nil || !*s.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v, want the service as controller", s.OwnerReferences)
	}
	if s.AddressType != discovery.AddressTypeIPv4 || len(s.Ports) != 1 || *s.Ports[0].Name != "http" || *s.Ports[0].Port != 8080 {
		t.Errorf("address type %s, ports %+v; want IPv4, http → 8080", s.AddressType, s.Ports)
	}
	for _, ep := range s.Endpoints {
		if len(ep.Addresses) != 1 || !strings.HasPrefix(ep.Addresses[0], "10.244.0.") || ep.NodeName == nil || *ep.NodeName != node ||
			ep.Zone == nil || *ep.Zone != zone || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
			t.Errorf("endpoint %+v", ep)
		}
	}
}
