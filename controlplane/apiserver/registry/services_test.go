package registry

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testServiceStrategy checks NodePorts against 30000-32767; its allocator
// has no store, which validation does not touch.
var testServiceStrategy = ServiceStrategy{ServiceAllocator: &ServiceAllocator{ports: testPorts}}

func newService(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: typ, Ports: ports, Selector: map[string]string{"app": "web"}}}
	svc.Name, svc.Namespace = "web", "default"
	return svc
}

func TestDefaultService(t *testing.T) {
	svc := newService("", corev1.ServicePort{Port: 80}, corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")})
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
	testServiceStrategy.PrepareForCreate(svc)

	tests := []struct {
		name      string
		got, want any
	}{
		{"type", svc.Spec.Type, corev1.ServiceTypeClusterIP},
		{"sessionAffinity", svc.Spec.SessionAffinity, corev1.ServiceAffinityNone},
		{"targetPort from port", svc.Spec.Ports[0].TargetPort, intstr.FromInt32(80)},
		{"protocol TCP", svc.Spec.Ports[0].Protocol, corev1.ProtocolTCP},
		{"named targetPort kept", svc.Spec.Ports[1].TargetPort, intstr.FromString("dns")},
		{"explicit protocol kept", svc.Spec.Ports[1].Protocol, corev1.ProtocolUDP},
		{"ipFamilies", svc.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}},
		{"ipFamilyPolicy", *svc.Spec.IPFamilyPolicy, corev1.IPFamilyPolicySingleStack},
		{"internalTrafficPolicy", *svc.Spec.InternalTrafficPolicy, corev1.ServiceInternalTrafficPolicyCluster},
		{"no externalTrafficPolicy for ClusterIP", svc.Spec.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicy("")},
		{"status cleared", svc.Status, corev1.ServiceStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestDefaultServiceVariants(t *testing.T) {
	tests := []struct {
		name  string
		svc   *corev1.Service
		check func(*corev1.ServiceSpec) bool
	}{
		{"NodePort gets externalTrafficPolicy Cluster", newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80}),
			func(s *corev1.ServiceSpec) bool {
				return s.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster
			}},
		{"clusterIP fills clusterIPs", func() *corev1.Service {
			svc := newService("", corev1.ServicePort{Port: 80})
			svc.Spec.ClusterIP = "10.96.0.10"
			return svc
		}(), func(s *corev1.ServiceSpec) bool { return reflect.DeepEqual(s.ClusterIPs, []string{"10.96.0.10"}) }},
		{"clusterIPs fills clusterIP", func() *corev1.Service {
			svc := newService("", corev1.ServicePort{Port: 80})
			svc.Spec.ClusterIPs = []string{"10.96.0.11"}
			return svc
		}(), func(s *corev1.ServiceSpec) bool { return s.ClusterIP == "10.96.0.11" }},
		{"ExternalName ports untouched", newService(corev1.ServiceTypeExternalName, corev1.ServicePort{Port: 80}),
			func(s *corev1.ServiceSpec) bool { return s.Ports[0].Protocol == "" && len(s.IPFamilies) == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defaultService(tt.svc)
			if !tt.check(&tt.svc.Spec) {
				t.Errorf("unexpected spec %+v", tt.svc.Spec)
			}
		})
	}
}

func TestServiceValidate(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{"valid ClusterIP", newService("", corev1.ServicePort{Port: 80}), nil},
		{"missing ports", newService(""), []string{"spec.ports: Required value"}},
		{"headless without ports", func() *corev1.Service {
			svc := newService("")
			svc.Spec.ClusterIP = corev1.ClusterIPNone
			return svc
		}(), nil},
		{"unnamed ports of a multi-port service", newService("", corev1.ServicePort{Port: 80}, corev1.ServicePort{Port: 443}),
			[]string{"spec.ports[0].name: Required value", "spec.ports[1].name: Required value"}},
		{"duplicate port names", newService("", corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "http", Port: 81}),
			[]string{"spec.ports[1].name: Duplicate value"}},
		{"port 0 and bad target", newService("", corev1.ServicePort{Port: 0, TargetPort: intstr.FromInt32(70000)}),
			[]string{"spec.ports[0].port: Invalid value", "spec.ports[0].targetPort: Invalid value"}},
		{"nodePort in range", newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80, NodePort: 30080}), nil},
		{"nodePort out of range", newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80, NodePort: 80}),
			[]string{"spec.ports[0].nodePort: Invalid value"}},
		{"nodePort on ClusterIP", newService(corev1.ServiceTypeClusterIP, corev1.ServicePort{Port: 80, NodePort: 30080}),
			[]string{"spec.ports[0].nodePort: Forbidden"}},
		{"headless NodePort", func() *corev1.Service {
			svc := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80})
			svc.Spec.ClusterIP = corev1.ClusterIPNone
			return svc
		}(), []string{"spec.clusterIPs[0]: Invalid value"}},
		{"bad clusterIP", func() *corev1.Service {
			svc := newService("", corev1.ServicePort{Port: 80})
			svc.Spec.ClusterIP = "10.96.0.300"
			return svc
		}(), []string{"spec.clusterIPs[0]: Invalid value"}},
		{"bad type", newService("Magic", corev1.ServicePort{Port: 80}), []string{"spec.type: Unsupported value"}},
		{"ExternalName without name", newService(corev1.ServiceTypeExternalName), []string{"spec.externalName: Required value"}},
		{"bad selector label", func() *corev1.Service {
			svc := newService("", corev1.ServicePort{Port: 80})
			svc.Spec.Selector = map[string]string{"app": "not valid!"}
			return svc
		}(), []string{"spec.selector: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testServiceStrategy.PrepareForCreate(tt.svc)
			apitest.CheckErrorFields(t, testServiceStrategy.Validate(tt.svc), tt.want...)
		})
	}
}

func TestServiceUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    *corev1.Service
		update func(*corev1.Service)
		check  func(*corev1.Service) bool
		want   []string
	}{
		{"omitted clusterIP kept", func() *corev1.Service {
			svc := newService("", corev1.ServicePort{Port: 80})
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
			return svc
		}(), func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil },
			func(s *corev1.Service) bool { return s.Spec.ClusterIP == "10.96.0.10" }, nil},
		{"changed clusterIP", func() *corev1.Service {
			svc := newService("", corev1.ServicePort{Port: 80})
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
			return svc
		}(), func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"} },
			nil, []string{"spec.clusterIPs[0]: Invalid value"}},
		{"omitted nodePort kept", newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80, NodePort: 30080}),
			func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 0 },
			func(s *corev1.Service) bool { return s.Spec.Ports[0].NodePort == 30080 }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defaultService(tt.old)
			svc := tt.old.DeepCopy()
			tt.update(svc)
			testServiceStrategy.PrepareForUpdate(svc, tt.old)
			if tt.check != nil && !tt.check(svc) {
				t.Errorf("unexpected spec after update: %+v", svc.Spec)
			}
			apitest.CheckErrorFields(t, testServiceStrategy.ValidateUpdate(svc, tt.old), tt.want...)
		})
	}
}

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in      string
		want    PortRange
		wantErr bool
	}{
		{"30000-32767", PortRange{30000, 32767}, false},
		{" 1 - 65535 ", PortRange{1, 65535}, false},
		{"80-80", PortRange{80, 80}, false},
		{"30000", PortRange{}, true},
		{"0-100", PortRange{}, true},
		{"100-65536", PortRange{}, true},
		{"200-100", PortRange{}, true},
		{"a-b", PortRange{}, true},
		{"1-2-3", PortRange{}, true},
		{"", PortRange{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePortRange(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParsePortRange(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err == nil && got.String() != fmt.Sprintf("%d-%d", tt.want.Base, tt.want.Max) {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func TestPortRangeContains(t *testing.T) {
	tests := []struct {
		port int32
		want bool
	}{{29999, false}, {30000, true}, {31000, true}, {32767, true}, {32768, false}, {-1, false}}
	for _, tt := range tests {
		if got := testPorts.contains(tt.port); got != tt.want {
			t.Errorf("contains(%d) = %v, want %v", tt.port, got, tt.want)
		}
	}
}

func TestServiceAllocatorAddresses(t *testing.T) {
	a, err := NewServiceAllocator(nil, apitest.MustCIDR(t, "10.96.0.0/16"), testPorts)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.FirstIP(); got != "10.96.0.1" {
		t.Errorf("FirstIP = %q, want 10.96.0.1", got)
	}
	if got := a.rangeString(); got != "10.96.0.0/16" {
		t.Errorf("rangeString = %q, want 10.96.0.0/16", got)
	}
	ipAt := []struct {
		offset uint32
		want   string
	}{{0, "10.96.0.0"}, {1, "10.96.0.1"}, {255, "10.96.0.255"}, {256, "10.96.1.0"}, {65534, "10.96.255.254"}}
	for _, tt := range ipAt {
		if got := a.ipAt(tt.offset); got != tt.want {
			t.Errorf("ipAt(%d) = %q, want %q", tt.offset, got, tt.want)
		}
	}
	offsets := []struct {
		ip     string
		want   uint32
		wantOK bool
	}{
		{"10.96.0.1", 1, true},
		{"10.96.1.0", 256, true},
		{"10.96.255.254", 65534, true},
		{"10.96.0.0", 0, false},         // network address
		{"10.96.255.255", 65535, false}, // broadcast address
		{"10.97.0.0", 65536, false},
		{"10.95.255.255", 0, false}, // below the range
		{"not-an-ip", 0, false},
		{"fd00::1", 0, false},
	}
	for _, tt := range offsets {
		t.Run(tt.ip, func(t *testing.T) {
			off, ok := a.offsetOf(tt.ip)
			if ok != tt.wantOK || (ok && off != tt.want) {
				t.Errorf("offsetOf(%q) = %d, %v; want %d, %v", tt.ip, off, ok, tt.want, tt.wantOK)
			}
			if ok && a.ipAt(off) != tt.ip {
				t.Errorf("ipAt(offsetOf(%q)) = %q", tt.ip, a.ipAt(off))
			}
		})
	}
}

func TestNewServiceAllocatorRejects(t *testing.T) {
	tests := []struct {
		name string
		cidr string
	}{
		{"IPv6", "fd00::/112"},
		{"too small", "10.0.0.0/31"},
		{"too large", "10.0.0.0/8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewServiceAllocator(nil, apitest.MustCIDR(t, tt.cidr), testPorts); err == nil {
				t.Errorf("newServiceAllocator(%s) succeeded", tt.cidr)
			}
		})
	}
	if _, err := NewServiceAllocator(nil, nil, testPorts); err == nil {
		t.Error("newServiceAllocator(nil CIDR) succeeded")
	}
}

func TestServicePortsCell(t *testing.T) {
	tests := []struct {
		name  string
		ports []corev1.ServicePort
		want  string
	}{
		{"none", nil, "<none>"},
		{"one", []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}, "80/TCP"},
		{"with nodePort", []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP},
			{Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}, "80/TCP,443:30443/TCP,53/UDP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := servicePorts(tt.ports); got != tt.want {
				t.Errorf("servicePorts = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExternalIPsCell(t *testing.T) {
	tests := []struct {
		name string
		svc  func(*corev1.Service)
		want string
	}{
		{"ClusterIP without external IPs", func(*corev1.Service) {}, "<none>"},
		{"ClusterIP with external IPs", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"1.1.1.1", "2.2.2.2"} }, "1.1.1.1,2.2.2.2"},
		{"ExternalName", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "db.example.com"
		}, "db.example.com"},
		{"LoadBalancer pending", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }, "<pending>"},
		{"LoadBalancer ingress and external IPs", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalIPs = []string{"9.9.9.9"}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "5.5.5.5"}, {Hostname: "lb.example.com"}, {IP: "5.5.5.5"}}
		}, "5.5.5.5,lb.example.com,9.9.9.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newService(corev1.ServiceTypeClusterIP)
			tt.svc(svc)
			if got := externalIPs(svc); got != tt.want {
				t.Errorf("externalIPs = %q, want %q", got, tt.want)
			}
		})
	}
}

// kubectl shows a load balancer ingress by its IP, or by its hostname when
// it has no IP.
func TestExternalIPsCellIngressWithIPAndHostname(t *testing.T) {
	svc := newService(corev1.ServiceTypeLoadBalancer)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "5.5.5.5", Hostname: "lb.example.com"}}
	if got := externalIPs(svc); got != "5.5.5.5" {
		t.Errorf("externalIPs = %q, want %q", got, "5.5.5.5")
	}
}
