package endpointslicemirroring_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestMirrorsCustomEndpoints runs the controller in a real control plane:
// the Endpoints a user writes for a Service without a selector appear as
// an EndpointSlice, follow its updates (and no write of the controller's
// own triggers another), and go when it is deleted; a skip-mirror label
// keeps an Endpoints out.
func TestMirrorsCustomEndpoints(t *testing.T) {
	c := servertest.Start(t).Client()
	ctx := t.Context()
	for _, name := range []string{"db", "skipped"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}}}
		if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"team": "data"}},
		Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Name: "pg", Port: 5432}},
			Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3"}}, NotReadyAddresses: []corev1.EndpointAddress{{IP: "fd00::1"}}}}}
	ep, err := c.CoreV1().Endpoints("default").Create(ctx, ep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	skipped := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "skipped", Labels: map[string]string{discovery.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 1}}, Addresses: []corev1.EndpointAddress{{IP: "10.9.9.9"}}}}}
	if _, err := c.CoreV1().Endpoints("default").Create(ctx, skipped, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	got := waitSlices(t, c, "db", "an IPv4 and an IPv6 slice", func(s []discovery.EndpointSlice) bool {
		return len(s) == 2 && addresses(s) == "IPv4:10.1.2.3(ready) IPv6:fd00::1(not ready) "
	})
	for _, s := range got {
		if s.Labels["team"] != "data" || s.Labels[discovery.LabelManagedBy] != "endpointslicemirroring-controller.k8s.io" ||
			len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != ep.UID || *s.Ports[0].Port != 5432 {
			t.Errorf("slice %+v", s)
		}
	}

	ep.Subsets = []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Name: "pg", Port: 5432}}, Addresses: []corev1.EndpointAddress{{IP: "10.2.3.4"}}}}
	if _, err := c.CoreV1().Endpoints("default").Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitSlices(t, c, "db", "the update mirrored", func(s []discovery.EndpointSlice) bool {
		return addresses(s) == "IPv4:10.2.3.4(ready) "
	})
	time.Sleep(2 * time.Second) // the controller sees its own write come back
	still := waitSlices(t, c, "db", "no further write", func(s []discovery.EndpointSlice) bool { return len(s) == 1 })
	if still[0].ResourceVersion != got[0].ResourceVersion {
		t.Errorf("the controller wrote its slice again (resourceVersion %s, then %s)", got[0].ResourceVersion, still[0].ResourceVersion)
	}

	if err := c.CoreV1().Endpoints("default").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, c, "db", "no slice once the Endpoints is gone", func(s []discovery.EndpointSlice) bool { return len(s) == 0 })
	waitSlices(t, c, "skipped", "no slice for a skipped Endpoints", func(s []discovery.EndpointSlice) bool { return len(s) == 0 })
}

func waitSlices(t *testing.T, c kubernetes.Interface, svc, what string, cond func([]discovery.EndpointSlice) bool) []discovery.EndpointSlice {
	t.Helper()
	var got []discovery.EndpointSlice
	servertest.Eventually(t, what, 20*time.Second, func(ctx context.Context) (bool, string) {
		list, err := c.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + svc})
		if err != nil {
			return false, err.Error()
		}
		got = list.Items
		return cond(got), addresses(got)
	})
	return got
}

// addresses lists the slices' address types and endpoints, IPv4 first.
func addresses(slices []discovery.EndpointSlice) string {
	var out string
	for _, t := range []discovery.AddressType{discovery.AddressTypeIPv4, discovery.AddressTypeIPv6} {
		for _, s := range slices {
			if s.AddressType != t {
				continue
			}
			for _, e := range s.Endpoints {
				state := "ready"
				if e.Conditions.Ready == nil || !*e.Conditions.Ready {
					state = "not ready"
				}
				out += string(t) + ":" + e.Addresses[0] + "(" + state + ") "
			}
		}
	}
	return out
}
