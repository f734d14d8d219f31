package agent

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodSysctls(t *testing.T) {
	pod := func(host string, sysctls ...v1.Sysctl) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: host == "net", HostIPC: host == "ipc"}}
		p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: sysctls}
		return p
	}
	tests := []struct {
		name    string
		pod     *v1.Pod
		want    map[string]string
		wantErr string
	}{
		{"none", &v1.Pod{}, nil, ""},
		{"safe", pod("", v1.Sysctl{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}, v1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}),
			map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"}, ""},
		{"slashes", pod("", v1.Sysctl{Name: "net/ipv4/tcp_syncookies", Value: "0"}), map[string]string{"net.ipv4.tcp_syncookies": "0"}, ""},
		{"unsafe", pod("", v1.Sysctl{Name: "kernel.msgmax", Value: "1"}), nil, `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"net with host network", pod("net", v1.Sysctl{Name: "net.ipv4.tcp_syncookies", Value: "0"}), nil,
			`forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		{"ipc with host ipc", pod("ipc", v1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}), nil,
			`forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled`},
		{"net with host ipc", pod("ipc", v1.Sysctl{Name: "net.ipv4.tcp_syncookies", Value: "0"}), map[string]string{"net.ipv4.tcp_syncookies": "0"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podSysctls(tt.pod)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if r := admit(tt.pod, nil); r == nil || r.Reason != "SysctlForbidden" || r.Message != tt.wantErr {
					t.Errorf("admit: %+v", r)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
			if r := admit(tt.pod, nil); r != nil {
				t.Errorf("admit refused: %+v", r)
			}
		})
	}
}

func TestDottedSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.tcp_syncookies":          "net.ipv4.tcp_syncookies",
		"net/ipv4/tcp_syncookies":          "net.ipv4.tcp_syncookies",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel":                           "kernel",
	} {
		if got := dottedSysctl(in); got != want {
			t.Errorf("dottedSysctl(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostNetworkPodFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("127.0.0.1\tlocalhost\n10.0.0.5\tnode1"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := string(nodeHostsFile(path, []v1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"a", "b"}}}))
	want := "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n10.0.0.5\tnode1\n# Entries added by HostAliases.\n10.1.1.1\ta\tb\n"
	if got != want {
		t.Errorf("hosts file:\n%s\nwant:\n%s", got, want)
	}
	host := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, Hostname: "mine"}}
	node, _ := os.Hostname()
	if name := podHostname(host); name != node {
		t.Errorf("host-network pod's hostname %q, want the node's %q", name, node)
	}
	if !strings.HasPrefix(string(hostsFile(host, []string{"10.0.0.9"})), "# Kubernetes-managed hosts file (host network).\n") {
		t.Error("host-network pod does not get the node's hosts file")
	}
}

func TestAdmitRefusesATakenHostPort(t *testing.T) {
	at := func(sec int64, name, ip string, phase v1.PodPhase) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.Unix(sec, 0)},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{
				{HostPort: 21017, ContainerPort: 80, Protocol: v1.ProtocolTCP, HostIP: ip}}}}},
			Status: v1.PodStatus{Phase: phase},
		}
	}
	holder := at(1, "holder", "", v1.PodRunning)
	late := at(2, "late", "", v1.PodPending)
	r := admit(late, []*v1.Pod{holder, late})
	if r == nil || r.Reason != "NodePorts" || r.Message != "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" {
		t.Fatalf("a pod asking for a held host port: %+v, want NodePorts", r)
	}
	if r := admit(holder, []*v1.Pod{holder, late}); r != nil {
		t.Errorf("the first of two pods on one port refused: %+v", r)
	}
	for _, other := range []*v1.Pod{at(1, "ended", "", v1.PodFailed), at(1, "elsewhere", "10.0.0.2", v1.PodRunning)} {
		if r := admit(at(2, "mine", "10.0.0.1", v1.PodPending), []*v1.Pod{other}); r != nil {
			t.Errorf("refused beside %s: %+v", other.Name, r)
		}
	}
}
