package dns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestCatalogIndexes builds the catalog on a shared informer factory, as
// the agent does, and reads through each index; then the same through a
// catalog saved to a file and loaded back, as a restarted agent without
// its server answers.
func TestCatalogIndexes(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{"big": "x"}},
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
	checkCatalog(t, "informers", cat)

	path := filepath.Join(t.TempDir(), "dns-catalog.json")
	if err := cat.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, n, err := LoadCatalog(path)
	if err != nil || n != 1 {
		t.Fatalf("load: %d services, %v", n, err)
	}
	checkCatalog(t, "loaded", loaded)
	if svc, _ := loaded.service("shop", "web"); svc.Annotations != nil {
		t.Errorf("saved with its annotations: %v", svc.Annotations)
	}
	os.WriteFile(path, []byte("{"), 0o600)
	if _, _, err := LoadCatalog(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a torn file: %v, want an error naming it", err)
	}
}

func checkCatalog(t *testing.T, what string, cat *Catalog) {
	t.Helper()
	if svc, ok := cat.service("shop", "web"); !ok || svc.Name != "web" {
		t.Errorf("%s: service: %v %v", what, svc, ok)
	}
	if svc, ok := cat.serviceByIP("10.96.0.20"); !ok || svc.Name != "web" {
		t.Errorf("%s: by IP: %v %v", what, svc, ok)
	}
	if got := cat.slices("shop", "web"); len(got) != 1 {
		t.Errorf("%s: slices: %v", what, got)
	}
	if !cat.hasNamespace("shop") || cat.hasNamespace("other") {
		t.Errorf("%s: namespaces", what)
	}
}
