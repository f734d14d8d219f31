package agent

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodDNSConfig(t *testing.T) {
	host := parseResolvConf([]byte("# the node's\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch corp.example\noptions edns0\n"))
	cluster := clusterDNS{server: "10.96.0.10", domain: "cluster.local"}
	ndots2 := "2"
	for _, tc := range []struct {
		name    string
		policy  v1.DNSPolicy
		hostNet bool
		extra   *v1.PodDNSConfig
		cluster clusterDNS
		want    string
		missing bool
	}{
		{name: "cluster first", policy: v1.DNSClusterFirst, cluster: cluster,
			want: "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{name: "cluster first on the host network", policy: v1.DNSClusterFirst, hostNet: true, cluster: cluster,
			want: "search corp.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions edns0\n"},
		{name: "cluster first with host net", policy: v1.DNSClusterFirstWithHostNet, hostNet: true, cluster: cluster,
			want: "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{name: "no cluster DNS on the node", policy: v1.DNSClusterFirst, missing: true,
			want: "search corp.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions edns0\n"},
		{name: "default", policy: v1.DNSDefault, cluster: cluster,
			want: "search corp.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions edns0\n"},
		{name: "none with dnsConfig", policy: v1.DNSNone, cluster: cluster,
			extra: &v1.PodDNSConfig{Nameservers: []string{"192.0.2.99"}, Searches: []string{"a.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &ndots2}}},
			want:  "search a.example\nnameserver 192.0.2.99\noptions ndots:2\n"},
		{name: "cluster first with dnsConfig", policy: v1.DNSClusterFirst, cluster: cluster,
			extra: &v1.PodDNSConfig{Nameservers: []string{"192.0.2.99", "10.96.0.10"}, Searches: []string{"cluster.local", "b.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &ndots2}, {Name: "single-request"}}},
			want: "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example b.example\nnameserver 10.96.0.10\nnameserver 192.0.2.99\noptions ndots:2 single-request\n"},
		{name: "at most three nameservers", policy: v1.DNSDefault,
			extra: &v1.PodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2"}},
			want:  "search corp.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nnameserver 192.0.2.1\noptions edns0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Spec: v1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNet, DNSConfig: tc.extra}}
			c, missing := podDNSConfig(pod, host, tc.cluster)
			if got := string(c.render()); got != tc.want || missing != tc.missing {
				t.Errorf("got (missing=%v)\n%s\nwant (missing=%v)\n%s", missing, got, tc.missing, tc.want)
			}
		})
	}
}

func TestSearchLimits(t *testing.T) {
	var many []string
	for range 40 {
		many = append(many, "a.example")
	}
	if got := limitSearches(many); len(got) != maxSearchDomains {
		t.Errorf("%d searches kept, want %d", len(got), maxSearchDomains)
	}
}

// TestDefaultResolvConf: a resolv.conf with only systemd-resolved's stub
// gives way to the upstream file; one with a real server is kept, and so
// is the stub-only one when there is no upstream file.
func TestDefaultResolvConf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stub := write("stub.conf", "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n")
	real := write("real.conf", "nameserver 192.0.2.1\nnameserver 127.0.0.53\n")
	upstream := write("upstream.conf", "nameserver 192.0.2.53\n")
	for _, tc := range []struct{ file, upstream, want string }{
		{stub, upstream, upstream},
		{real, upstream, real},
		{stub, filepath.Join(dir, "absent"), stub},
		{filepath.Join(dir, "none"), upstream, filepath.Join(dir, "none")},
	} {
		if got := defaultResolvConf(tc.file, tc.upstream); got != tc.want {
			t.Errorf("defaultResolvConf(%s, %s) = %s, want %s", tc.file, tc.upstream, got, tc.want)
		}
	}
}
