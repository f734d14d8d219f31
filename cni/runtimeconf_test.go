package cni

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRuntimeConf(t *testing.T) {
	pod := Pod{ID: "abc123", Namespace: "default", Name: "web-0", UID: "uid-1"}
	tests := []struct {
		name    string
		ports   []PortMapping
		want    string // portMappings as JSON; "" means no capability args
		wantErr string
	}{
		{name: "no ports"},
		{name: "only unpublished ports", ports: []PortMapping{{ContainerPort: 80, Protocol: "TCP"}}},
		{
			name: "published ports",
			ports: []PortMapping{
				{HostPort: 8080, ContainerPort: 80, Protocol: "TCP"},
				{HostPort: 5353, ContainerPort: 53, Protocol: "UDP", HostIP: "127.0.0.1"},
				{HostPort: 9000, ContainerPort: 9000},
				{ContainerPort: 443},
			},
			want: `[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},` +
				`{"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"127.0.0.1"},` +
				`{"hostPort":9000,"containerPort":9000,"protocol":"tcp"}]`,
		},
		{name: "bad protocol", ports: []PortMapping{{HostPort: 1, ContainerPort: 1, Protocol: "ICMP"}}, wantErr: "protocol"},
		{name: "no container port", ports: []PortMapping{{HostPort: 80}}, wantErr: "invalid port mapping"},
		{name: "host port too big", ports: []PortMapping{{HostPort: 70000, ContainerPort: 80}}, wantErr: "invalid port mapping"},
		{name: "bad host ip", ports: []PortMapping{{HostPort: 80, ContainerPort: 80, HostIP: "node"}}, wantErr: "host ip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod
			p.Ports = tt.ports
			rt, err := runtimeConf(p, "/run/skiff/netns/abc123")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantArgs := [][2]string{
				{"IgnoreUnknown", "1"},
				{"K8S_POD_NAMESPACE", "default"},
				{"K8S_POD_NAME", "web-0"},
				{"K8S_POD_INFRA_CONTAINER_ID", "abc123"},
				{"K8S_POD_UID", "uid-1"},
			}
			if rt.ContainerID != "abc123" || rt.NetNS != "/run/skiff/netns/abc123" || rt.IfName != "eth0" {
				t.Errorf("rt = %+v", rt)
			}
			if !reflect.DeepEqual(rt.Args, wantArgs) {
				t.Errorf("args = %v, want %v", rt.Args, wantArgs)
			}
			checkPortMappings(t, rt.CapabilityArgs, tt.want)
		})
	}
}

func checkPortMappings(t *testing.T, caps map[string]any, want string) {
	t.Helper()
	if want == "" {
		if caps != nil {
			t.Errorf("capability args = %v, want none", caps)
		}
		return
	}
	got, err := json.Marshal(caps["portMappings"])
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("portMappings = %s, want %s", got, want)
	}
}

func TestValidateID(t *testing.T) {
	for id, ok := range map[string]bool{
		"abc123": true, "a.b-c_d": true, "0f": true,
		"": false, ".": false, "..": false, "a/b": false, "-x": false, "a b": false,
	} {
		if err := validateID(id); (err == nil) != ok {
			t.Errorf("validateID(%q) = %v, want ok %v", id, err, ok)
		}
	}
}
