package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
)

// extensionServer is an extension API server of group wardle.example.com
// on 127.0.0.1 that trusts the front proxy as an extension server does:
// the client certificate must be of the requestheader CA and named
// front-proxy-client; it records who the proxied requests spoke for.
type extensionServer struct {
	*httptest.Server
	mu    sync.Mutex
	users []string
}

func startExtensionServer(t *testing.T, requestHeaderCA []byte) *extensionServer {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(requestHeaderCA) {
		t.Fatal("no requestheader CA")
	}
	es := &extensionServer{}
	es.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		certs := r.TLS.PeerCertificates
		if len(certs) == 0 || certs[0].Subject.CommonName != "front-proxy-client" {
			http.Error(w, "not the front proxy", http.StatusUnauthorized)
			return
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		es.mu.Lock()
		es.users = append(es.users, r.Header.Get("X-Remote-User"))
		es.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/wardle.example.com/v1alpha1":
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "wardle.example.com/v1alpha1", APIResources: []metav1.APIResource{{Name: "flunders", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get", "list"}}}})
		case "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders":
			_, _ = w.Write([]byte(`{"apiVersion":"wardle.example.com/v1alpha1","kind":"FlunderList","metadata":{},"items":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	es.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	es.StartTLS()
	t.Cleanup(es.Close)
	return es
}

func (es *extensionServer) seen() []string {
	es.mu.Lock()
	defer es.mu.Unlock()
	return append([]string(nil), es.users...)
}

// TestAPIAggregation: an APIService of a group skiff does not serve,
// backed by a Service, becomes Available once its server answers; requests
// for the group are proxied to it by the front proxy, whose CA skiff
// publishes in kube-system/extension-apiserver-authentication, speaking
// for the requesting user; the group joins discovery. The groups skiff
// serves itself have Local APIServices, the metrics API's as
// metrics-server's.
func TestAPIAggregation(t *testing.T) {
	s, client := startServer(t)
	ctx := context.Background()
	info, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Data["requestheader-allowed-names"] != `["front-proxy-client"]` || info.Data["requestheader-username-headers"] != `["X-Remote-User"]` || info.Data["client-ca-file"] == "" {
		t.Fatalf("authentication info = %v", info.Data)
	}
	es := startExtensionServer(t, []byte(info.Data["requestheader-client-ca-file"]))
	exposeOnLoopback(t, client, "wardle", es.Listener.Addr())

	agg := aggregator.NewForConfigOrDie(s.RESTConfig())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: es.Certificate().Raw})
	svc := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1", GroupPriorityMinimum: 2000, VersionPriority: 200,
			Service: &apiregistrationv1.ServiceReference{Namespace: "default", Name: "wardle", Port: ptr.To[int32](443)}, CABundle: ca}}
	// httptest's certificate names 127.0.0.1 and example.com, not the
	// Service: the aggregator checks the name it dials.
	svc.Spec.InsecureSkipTLSVerify, svc.Spec.CABundle = true, nil
	if _, err := agg.ApiregistrationV1().APIServices().Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{svc.Name, "v1beta1.metrics.k8s.io", "v1.", "v1.apps"} {
		waitFor(t, "APIService "+name+" to be Available", func() bool { return available(ctx, agg, name) })
	}
	if m, _ := agg.ApiregistrationV1().APIServices().Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{}); m.Spec.Service != nil || m.Spec.GroupPriorityMinimum != 100 {
		t.Errorf("the metrics API's APIService = %+v, want a Local one with metrics-server's priorities", m.Spec)
	}
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders").DoRaw(ctx)
	if err != nil || !json.Valid(raw) {
		t.Fatalf("list flunders through the aggregator: %s %v", raw, err)
	}
	if users := es.seen(); len(users) == 0 || users[len(users)-1] != "skiff-admin" {
		t.Errorf("the extension server saw users %v, want the proxied request for skiff-admin last", users)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(s.RESTConfig())
	waitFor(t, "wardle in discovery", func() bool {
		groups, err := disc.ServerGroups()
		return err == nil && hasGroup(groups, "wardle.example.com")
	})
}

func available(ctx context.Context, agg aggregator.Interface, name string) bool {
	got, err := agg.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range got.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return c.Status == apiregistrationv1.ConditionTrue
		}
	}
	return false
}

// exposeOnLoopback makes Service default/name, port 443, whose one
// endpoint is addr on the loopback (the server runs in this process).
func exposeOnLoopback(t *testing.T, client kubernetes.Interface, name string, addr net.Addr) {
	t.Helper()
	ctx := context.Background()
	port := addr.(*net.TCPAddr).Port
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt(port)}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
