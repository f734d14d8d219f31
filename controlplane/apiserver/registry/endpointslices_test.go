package registry

import (
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func slice(typ discoveryv1.AddressType, endpoints []discoveryv1.Endpoint, ports ...discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: typ, Endpoints: endpoints, Ports: ports}
	s.Name = "web-abcde"
	return s
}

func addresses(a ...string) discoveryv1.Endpoint { return discoveryv1.Endpoint{Addresses: a} }

func TestEndpointSliceValidate(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	tooMany := make([]string, maxSliceAddresses+1)
	for i := range tooMany {
		tooMany[i] = "10.0.0.1"
	}
	tests := []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		want  []string
	}{
		{"valid", slice(v4, []discoveryv1.Endpoint{addresses("10.244.0.5")}, discoveryv1.EndpointPort{Name: new("http"), Port: new(int32(80))}), nil},
		{"FQDN", slice(discoveryv1.AddressTypeFQDN, []discoveryv1.Endpoint{addresses("db.example.com")}), nil},
		{"no address type", slice("", nil), []string{"addressType: Required value"}},
		{"unknown address type", slice("IP", nil), []string{"addressType: Unsupported value"}},
		{"endpoint without addresses", slice(v4, []discoveryv1.Endpoint{{}}), []string{"endpoints[0].addresses: Required value"}},
		{"too many addresses", slice(v4, []discoveryv1.Endpoint{addresses(tooMany...)}), []string{"endpoints[0].addresses: Too many"}},
		{"IPv6 in an IPv4 slice", slice(v4, []discoveryv1.Endpoint{addresses("fd00::1")}), []string{"endpoints[0].addresses[0]: Invalid value"}},
		{"not an IP", slice(discoveryv1.AddressTypeIPv6, []discoveryv1.Endpoint{addresses("nope")}), []string{"endpoints[0].addresses[0]: Invalid value"}},
		{"bad hostname and node name", slice(v4, []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Hostname: new("A_B"), NodeName: new("n/1")}}),
			[]string{"endpoints[0].hostname: Invalid value", "endpoints[0].nodeName: Invalid value"}},
		{"duplicate port names, bad protocol and port", slice(v4, nil,
			discoveryv1.EndpointPort{Port: new(int32(80))}, discoveryv1.EndpointPort{Port: new(int32(0)), Protocol: new(corev1.Protocol("ICMP"))}),
			[]string{"ports[1].name: Duplicate value", "ports[1].protocol: Unsupported value", "ports[1].port: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpointSliceStrategy{}.PrepareForCreate(tt.slice)
			apitest.CheckErrorFields(t, endpointSliceStrategy{}.Validate(tt.slice), tt.want...)
		})
	}
}

func TestEndpointSliceDefaultsAndUpdate(t *testing.T) {
	s := slice(discoveryv1.AddressTypeIPv4, nil, discoveryv1.EndpointPort{Port: new(int32(80))})
	endpointSliceStrategy{}.PrepareForCreate(s)
	if p := s.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
		t.Errorf("port = %+v, want name \"\" and TCP", p)
	}
	changed := s.DeepCopy()
	changed.AddressType = discoveryv1.AddressTypeIPv6
	apitest.CheckErrorFields(t, endpointSliceStrategy{}.ValidateUpdate(changed, s), "addressType: Invalid value")
}

func TestEndpointSliceRow(t *testing.T) {
	s := slice(discoveryv1.AddressTypeIPv4,
		[]discoveryv1.Endpoint{addresses("10.0.0.1", "10.0.0.2"), addresses("10.0.0.3"), addresses("10.0.0.4")},
		discoveryv1.EndpointPort{Port: new(int32(80))}, discoveryv1.EndpointPort{Name: new("metrics")})
	row := endpointSliceStrategy{}.Row(s)
	got := []string{row[1].(string), row[2].(string), row[3].(string)}
	want := []string{"IPv4", "80,metrics", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("row = %q, want %q", got, want)
	}
	if empty := (endpointSliceStrategy{}).Row(slice(discoveryv1.AddressTypeIPv4, nil)); empty[2] != "<unset>" || empty[3] != "<unset>" {
		t.Errorf("empty slice row = %v, want <unset> ports and endpoints", empty)
	}
}

func TestEndpointSliceGeneration(t *testing.T) {
	old := slice(discoveryv1.AddressTypeIPv4, []discoveryv1.Endpoint{addresses("10.0.0.1")})
	old.Labels = map[string]string{"a": "1"}
	for _, tc := range []struct {
		name string
		edit func(*discoveryv1.EndpointSlice)
		want bool
	}{
		{"nothing", func(*discoveryv1.EndpointSlice) {}, false},
		{"annotation", func(s *discoveryv1.EndpointSlice) { s.Annotations = map[string]string{"b": "2"} }, false},
		{"label", func(s *discoveryv1.EndpointSlice) { s.Labels["a"] = "2" }, true},
		{"endpoint", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "10.0.0.2" }, true},
		{"port", func(s *discoveryv1.EndpointSlice) { s.Ports = []discoveryv1.EndpointPort{{Port: new(int32(80))}} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := old.DeepCopy()
			tc.edit(s)
			if got := SpecChanged(endpointSliceStrategy{}, s, old); got != tc.want {
				t.Errorf("specChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
