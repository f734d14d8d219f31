package dns

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestCatalogIndexes builds the catalog on a shared informer factory, as
// the agent does, and reads through each index.
func TestCatalogIndexes(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"}}},
		&discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abc",
			Labels: map[string]string{discovery.LabelServiceName: "web"}}, AddressType: discovery.AddressTypeIPv4},
	)
	inf := informers.NewSharedInformerFactory(client, 0)
	services, slices := inf.Core().V1().Services().Informer(), inf.Discovery().V1().EndpointSlices().Informer()
	cat, err := NewCatalog(services, slices)
	if err != nil {
		t.Fatal(err)
	}
	inf.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), services.HasSynced, slices.HasSynced) {
		t.Fatal("informers did not sync")
	}
	if svc, ok := cat.service("shop", "web"); !ok || svc.Name != "web" {
		t.Errorf("service: %v %v", svc, ok)
	}
	if svc, ok := cat.serviceByIP("10.96.0.20"); !ok || svc.Name != "web" {
		t.Errorf("by IP: %v %v", svc, ok)
	}
	if got := cat.slices("shop", "web"); len(got) != 1 {
		t.Errorf("slices: %v", got)
	}
	if !cat.hasNamespace("shop") || cat.hasNamespace("other") {
		t.Error("namespaces")
	}
}
