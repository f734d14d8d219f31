package envvars

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func service(namespace, name, clusterIP string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

func port(name string, p int32, proto v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: p, Protocol: proto}
}

var apiServer = service("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP))

var apiServerVars = []string{
	"KUBERNETES_SERVICE_HOST=10.96.0.1",
	"KUBERNETES_SERVICE_PORT=443",
	"KUBERNETES_SERVICE_PORT_HTTPS=443",
	"KUBERNETES_PORT=tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO=tcp",
	"KUBERNETES_PORT_443_TCP_PORT=443",
	"KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
}

func TestServiceLinkVars(t *testing.T) {
	tests := []struct {
		name string
		svc  *v1.Service
		want []string
	}{
		{"dashes, named and unnamed ports, default protocol", service("ns", "my-db", "10.0.0.7", port("", 5432, ""), port("metrics-http", 9187, v1.ProtocolTCP)), []string{
			"MY_DB_SERVICE_HOST=10.0.0.7",
			"MY_DB_SERVICE_PORT=5432",
			"MY_DB_SERVICE_PORT_METRICS_HTTP=9187",
			"MY_DB_PORT=tcp://10.0.0.7:5432",
			"MY_DB_PORT_5432_TCP=tcp://10.0.0.7:5432",
			"MY_DB_PORT_5432_TCP_PROTO=tcp",
			"MY_DB_PORT_5432_TCP_PORT=5432",
			"MY_DB_PORT_5432_TCP_ADDR=10.0.0.7",
			"MY_DB_PORT_9187_TCP=tcp://10.0.0.7:9187",
			"MY_DB_PORT_9187_TCP_PROTO=tcp",
			"MY_DB_PORT_9187_TCP_PORT=9187",
			"MY_DB_PORT_9187_TCP_ADDR=10.0.0.7",
		}},
		{"udp", service("ns", "dns", "10.0.0.10", port("dns", 53, v1.ProtocolUDP)), []string{
			"DNS_SERVICE_HOST=10.0.0.10",
			"DNS_SERVICE_PORT=53",
			"DNS_SERVICE_PORT_DNS=53",
			"DNS_PORT=udp://10.0.0.10:53",
			"DNS_PORT_53_UDP=udp://10.0.0.10:53",
			"DNS_PORT_53_UDP_PROTO=udp",
			"DNS_PORT_53_UDP_PORT=53",
			"DNS_PORT_53_UDP_ADDR=10.0.0.10",
		}},
		{"ipv6 bracketed in URLs only", service("ns", "web", "fd00::10", port("", 80, v1.ProtocolTCP)), []string{
			"WEB_SERVICE_HOST=fd00::10",
			"WEB_SERVICE_PORT=80",
			"WEB_PORT=tcp://[fd00::10]:80",
			"WEB_PORT_80_TCP=tcp://[fd00::10]:80",
			"WEB_PORT_80_TCP_PROTO=tcp",
			"WEB_PORT_80_TCP_PORT=80",
			"WEB_PORT_80_TCP_ADDR=fd00::10",
		}},
		{"no ports", service("ns", "bare", "10.0.0.9"), []string{"BARE_SERVICE_HOST=10.0.0.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVars()
			for _, e := range serviceLinkVars(tt.svc) {
				v.set(e.name, e.value)
			}
			if got := v.strings(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestForServices checks which services a pod sees and in what order.
func TestForServices(t *testing.T) {
	shopServices := []*v1.Service{
		service("shop", "web", "10.0.0.2"),
		service("shop", "api", "10.0.0.3"),
		service("shop", "headless", v1.ClusterIPNone),
		service("shop", "pending", ""),
	}
	defaultServices := []*v1.Service{apiServer, service("default", "other", "10.96.0.9")}
	tests := []struct {
		name      string
		namespace string
		links     *bool
		services  map[string][]*v1.Service
		want      []string // the *_SERVICE_HOST entries, in order
		calls     []string
	}{
		{"links by default", "shop", nil, map[string][]*v1.Service{"default": defaultServices, "shop": shopServices},
			[]string{"API_SERVICE_HOST=10.0.0.3", "KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.0.0.2"},
			[]string{"services default", "services shop"}},
		{"links enabled", "shop", new(true), map[string][]*v1.Service{"default": defaultServices, "shop": shopServices},
			[]string{"API_SERVICE_HOST=10.0.0.3", "KUBERNETES_SERVICE_HOST=10.96.0.1", "WEB_SERVICE_HOST=10.0.0.2"},
			[]string{"services default", "services shop"}},
		{"links disabled: only kubernetes", "shop", new(false), map[string][]*v1.Service{"default": defaultServices, "shop": shopServices},
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1"}, []string{"services default"}},
		{"default namespace lists once", "default", nil, map[string][]*v1.Service{"default": defaultServices},
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "OTHER_SERVICE_HOST=10.96.0.9"}, []string{"services default"}},
		{"default namespace, links disabled", "default", new(false), map[string][]*v1.Service{"default": defaultServices},
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1"}, []string{"services default"}},
		{"own kubernetes service wins", "shop", nil, map[string][]*v1.Service{"default": {apiServer}, "shop": {service("shop", "kubernetes", "10.0.0.99")}},
			[]string{"KUBERNETES_SERVICE_HOST=10.0.0.99"}, []string{"services default", "services shop"}},
		{"own headless kubernetes service does not", "shop", nil, map[string][]*v1.Service{"default": {apiServer}, "shop": {service("shop", "kubernetes", v1.ClusterIPNone)}},
			[]string{"KUBERNETES_SERVICE_HOST=10.96.0.1"}, []string{"services default", "services shop"}},
		{"no kubernetes service", "shop", nil, map[string][]*v1.Service{}, nil, []string{"services default", "services shop"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSources{services: tt.services}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace}, Spec: v1.PodSpec{EnableServiceLinks: tt.links}}
			res, err := For(context.Background(), src, pod, &v1.Container{Name: "c"}, Input{})
			if err != nil {
				t.Fatalf("For: %v", err)
			}
			var got []string
			for _, kv := range res.Env {
				if strings.Contains(kv, "_SERVICE_HOST=") {
					got = append(got, kv)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("service hosts %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(src.calls, tt.calls) {
				t.Errorf("calls %q, want %q", src.calls, tt.calls)
			}
		})
	}
}

func TestForServicesWhole(t *testing.T) {
	src := &fakeSources{services: map[string][]*v1.Service{"default": {apiServer}}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}}
	res, err := For(context.Background(), src, pod, &v1.Container{Name: "c"}, Input{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	if !reflect.DeepEqual(res.Env, apiServerVars) {
		t.Errorf("env\n%s\nwant\n%s", strings.Join(res.Env, "\n"), strings.Join(apiServerVars, "\n"))
	}
}

func TestForServicesError(t *testing.T) {
	boom := errors.New("boom")
	for _, failing := range []string{"default", "shop"} {
		t.Run(failing, func(t *testing.T) {
			src := &fakeSources{err: boom, failOnly: "services " + failing}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}}
			_, err := For(context.Background(), src, pod, &v1.Container{Name: "c"}, Input{})
			if !errors.Is(err, boom) || errors.Is(err, ErrMissing) {
				t.Fatalf("For: %v, want boom and not ErrMissing", err)
			}
			if want := "list services in " + failing + ": boom"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}
