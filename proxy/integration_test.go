package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-lab/skiff/test/netnstest"
)

// lab is a node in a network namespace of its own, with a bridge and pods
// (namespaces on veths) serving their names over HTTP on port 8080, so that
// the proxy's real rules can be tried without touching the machine's.
type lab struct {
	t    testing.TB
	node string // the node's namespace
	pods []string
}

const labSubnet = "10.99.0" // the bridge is .1, pods .2 on; inside the lab only

func newLab(t testing.TB, pods int) *lab {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("proxy integration: needs root for network namespaces and iptables")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	l := &lab{t: t, node: "skiff-px-" + hex.EncodeToString(b)}
	// Last of the cleanups: the mount `ip netns add` made of /run/netns
	// goes with the last namespace in it, as test/vm/lab.sh's down does.
	t.Cleanup(func() {
		l.sh(`if mountpoint -q /run/netns && [ -z "$(ls -A /run/netns)" ]; then umount /run/netns 2>/dev/null; fi; true`)
	})
	l.sh("ip netns add " + l.node)
	t.Cleanup(func() { l.sh("ip netns del " + l.node) })
	// The node's default route leads to a namespace that forwards
	// nothing: what no rule catches "leaves" there, as it would leave a
	// real node, and goes no further.
	out := l.node + "-out"
	l.sh("ip netns add " + out)
	t.Cleanup(func() { l.sh("ip netns del " + out) })
	l.sh(fmt.Sprintf("ip link add ext0 netns %s type veth peer name ext1 netns %s", l.node, out))
	l.in(out, "ip link set ext1 up && ip addr add 192.0.2.254/24 dev ext1")
	l.in(l.node, "ip link set lo up && ip link add br0 type bridge && ip addr add "+labSubnet+".1/24 dev br0 && ip link set br0 up && "+
		"ip addr add 192.0.2.1/24 dev ext0 && ip link set ext0 up && ip route add default via 192.0.2.254")
	for i := range pods {
		l.addPod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("%s.%d", labSubnet, i+2))
	}
	return l
}

func (l *lab) addPod(name, ip string) {
	ns := l.node + "-" + name
	l.sh("ip netns add " + ns)
	l.t.Cleanup(func() { l.sh("ip netns del " + ns) })
	veth := "v" + name
	l.sh(fmt.Sprintf("ip link add %s netns %s type veth peer name eth0 netns %s", veth, l.node, ns))
	l.in(l.node, fmt.Sprintf("ip link set %s master br0 up && bridge link set dev %s hairpin on", veth, veth))
	l.in(ns, fmt.Sprintf("ip link set lo up && ip addr add %s/24 dev eth0 && ip link set eth0 up && ip route add default via %s.1", ip, labSubnet))
	dir := l.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(name+"\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	httpd := exec.Command("ip", "netns", "exec", ns, "busybox", "httpd", "-f", "-p", "8080", "-h", dir)
	if err := httpd.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })
	l.pods = append(l.pods, ns)
}

func (l *lab) sh(cmd string) string {
	l.t.Helper()
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return string(out)
}

// in runs cmd in namespace ns.
func (l *lab) in(ns, cmd string) string {
	l.t.Helper()
	return l.sh("ip netns exec " + ns + " sh -c '" + cmd + "'")
}

// try runs cmd in ns and returns its output, failing or not.
func (l *lab) try(ns, cmd string) string {
	out, _ := exec.Command("ip", "netns", "exec", ns, "sh", "-c", cmd).CombinedOutput()
	return string(out)
}

// enter runs the rest of tb on this OS thread inside the node's namespace:
// the proxier's iptables, sysctl and netlink calls happen there.
func (l *lab) enter(tb testing.TB) {
	h, err := netns.GetFromName(l.node)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	netnstest.Enter(tb, h)
}

func labService(name, ip string, edit ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
	for _, e := range edit {
		e(svc)
	}
	return svc
}

// elsewhere marks the endpoints of s at ips as another node's: the proxy
// DNATs to them in place, without a KUBE-SEP chain.
func elsewhere(s *discovery.EndpointSlice, ips ...string) *discovery.EndpointSlice {
	for i, e := range s.Endpoints {
		if slices.Contains(ips, e.Addresses[0]) {
			s.Endpoints[i].NodeName = new("n2")
		}
	}
	return s
}

func labSlice(service string, ips ...string) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: service + "-1", Labels: map[string]string{discovery.LabelServiceName: service}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: new("http"), Port: new(int32(8080)), Protocol: new(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{ip}, NodeName: new("n1")})
	}
	return s
}

func labProxier(t testing.TB) *Proxier {
	p, err := New(Config{NodeName: "n1", PodCIDR: labSubnet + ".0/24", ServiceCIDR: "10.96.0.0/16"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSync(t testing.TB, p *Proxier) {
	t.Helper()
	if err := p.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestProxyRoutesInALab(t *testing.T) {
	l := newLab(t, 3)
	l.enter(t)
	p := labProxier(t)
	p.changes.service(labService("web", "10.96.0.20", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	}), false)
	// pod-0 is this node's (hairpin through its KUBE-SEP chain), the others
	// count as another node's.
	p.changes.slice(elsewhere(labSlice("web", labSubnet+".2", labSubnet+".3", labSubnet+".4"), labSubnet+".3", labSubnet+".4"), false)
	p.changes.service(labService("empty", "10.96.0.21"), false)
	mustSync(t, p)

	answers := l.try(l.pods[0], "for i in $(seq 30); do timeout 2 busybox wget -q -O- http://10.96.0.20/; done")
	for i := range 3 {
		if !strings.Contains(answers, fmt.Sprintf("pod-%d", i)) {
			t.Errorf("pod-%d never answered through the cluster IP (pod-0 is hairpin):\n%s", i, answers)
		}
	}
	if got := l.try(l.node, "timeout 2 busybox wget -q -O- http://127.0.0.1:30080/"); !strings.HasPrefix(got, "pod-") {
		t.Errorf("node port on 127.0.0.1: %q", got)
	}
	if got := l.try(l.pods[0], "timeout 2 busybox wget -q -O- http://10.96.0.21/ 2>&1"); !strings.Contains(got, "Connection refused") {
		t.Errorf("a service without endpoints: %q, want connection refused", got)
	}
	if got := l.try(l.pods[0], "timeout 2 busybox wget -q -O- http://10.96.7.7/ 2>&1"); !strings.Contains(got, "Connection refused") {
		t.Errorf("an address of the service CIDR without a service: %q, want connection refused", got)
	}
}

// answers asks url from ns n times and returns who answered, in order.
func (l *lab) answers(ns, url string, n int) []string {
	out := l.try(ns, fmt.Sprintf("for i in $(seq %d); do timeout 2 busybox wget -q -O- %s; done", n, url))
	return strings.Fields(out)
}

func distinct(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// TestProxyFollowsChangesInALab checks partial syncs against the kernel:
// an endpoint leaving stops getting traffic, session affinity keeps a
// client on one endpoint, services come and go, a restarted proxy adopts
// the rules and deletes what it no longer needs, and Cleanup removes
// everything.
func TestProxyFollowsChangesInALab(t *testing.T) {
	l := newLab(t, 3)
	l.enter(t)
	p := labProxier(t)
	all := []string{labSubnet + ".2", labSubnet + ".3", labSubnet + ".4"}
	p.changes.service(labService("web", "10.96.0.20"), false)
	p.changes.slice(labSlice("web", all...), false)
	p.changes.service(labService("sticky", "10.96.0.22", func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	}), false)
	// sticky's endpoints count as another node's: affinity without
	// KUBE-SEP chains (asked from the node: pod-0 reaching itself would
	// need the hairpin masquerade that only this node's endpoints get).
	p.changes.slice(elsewhere(labSlice("sticky", all...), all...), false)
	mustSync(t, p)
	if got := distinct(l.answers(l.node, "http://10.96.0.22/", 15)); len(got) != 1 {
		t.Errorf("ClientIP affinity: answered by %v, want one endpoint", got)
	}

	p.changes.slice(labSlice("web", all[1:]...), false)
	mustSync(t, p)
	if got := distinct(l.answers(l.pods[1], "http://10.96.0.20/", 20)); got["pod-0"] || len(got) != 2 {
		t.Errorf("after pod-0 left: answered by %v, want pod-1 and pod-2", got)
	}

	// Partial syncs insert a new service's rules and delete a gone one's.
	p.changes.service(labService("late", "10.96.0.23"), false)
	p.changes.slice(labSlice("late", all[2]), false)
	p.changes.service(labService("sticky", "10.96.0.22"), true)
	mustSync(t, p)
	if got := l.answers(l.pods[0], "http://10.96.0.23/", 3); len(got) != 3 || got[0] != "pod-2" {
		t.Errorf("a service added by a partial sync: answered by %v", got)
	}
	if got := l.try(l.pods[0], "timeout 2 busybox wget -q -O- http://10.96.0.22/ 2>&1"); !strings.Contains(got, "Connection refused") {
		t.Errorf("a service deleted by a partial sync: %q, want connection refused", got)
	}
	if left := l.in(l.node, "iptables-save"); strings.Contains(left, "default/sticky") {
		t.Errorf("the deleted service's rules are left:\n%s", left)
	}

	// A new proxier, as after an agent restart, that no longer has the
	// late service: its first sync adopts web and deletes late's chains.
	restarted := labProxier(t)
	restarted.changes.service(labService("web", "10.96.0.20"), false)
	restarted.changes.slice(labSlice("web", all[1:]...), false)
	mustSync(t, restarted)
	if after := l.in(l.node, "iptables-save -t nat"); strings.Contains(after, "default/late") {
		t.Errorf("late's chains not deleted by the restarted proxy:\n%s", after)
	}
	if got := distinct(l.answers(l.pods[1], "http://10.96.0.20/", 10)); len(got) != 2 {
		t.Errorf("after the restart: answered by %v", got)
	}

	if err := Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := l.in(l.node, "iptables-save"); strings.Contains(left, "KUBE-") {
		t.Errorf("left after Cleanup:\n%s", left)
	}
}

// inNetns runs f on this OS thread inside namespace ns; sockets f opens
// stay in it.
func (l *lab) inNetns(ns string, f func()) {
	l.t.Helper()
	h, err := netns.GetFromName(ns)
	if err != nil {
		l.t.Fatal(err)
	}
	defer h.Close()
	if err := netnstest.Do(h, f); err != nil {
		l.t.Fatal(err)
	}
}

// udpResponder answers every datagram on port 5353 in pod i's namespace
// with the pod's name.
func (l *lab) udpResponder(i int) {
	h, err := netns.GetFromName(l.pods[i])
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { h.Close() })
	netnstest.AnswerUDP(l.t, h, 5353, fmt.Sprintf("pod-%d", i))
}

// TestProxyUDPInALab checks a UDP service, and that when its endpoint
// changes the proxy deletes the flow's conntrack entry: the same client
// socket, which would otherwise stay pinned to the old endpoint, reaches
// the new one.
func TestProxyUDPInALab(t *testing.T) {
	l := newLab(t, 3)
	l.udpResponder(1)
	l.udpResponder(2)
	var client net.PacketConn
	l.inNetns(l.pods[0], func() {
		var err error
		if client, err = net.ListenPacket("udp4", ":40000"); err != nil {
			t.Fatal(err)
		}
	})
	defer client.Close()
	ask := func() string {
		buf := make([]byte, 64)
		for range 5 {
			_, _ = client.WriteTo([]byte("hi"), &net.UDPAddr{IP: net.ParseIP("10.96.0.30"), Port: 53})
			_ = client.SetReadDeadline(time.Now().Add(time.Second))
			if n, _, err := client.ReadFrom(buf); err == nil {
				return string(buf[:n])
			}
		}
		return "no answer"
	}
	l.enter(t)
	p := labProxier(t)
	svc := labService("dns", "10.96.0.30")
	svc.Spec.Ports = []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}}
	p.changes.service(svc, false)
	p.changes.slice(udpSlice(labSubnet+".3"), false)
	mustSync(t, p)
	if got := ask(); got != "pod-1" {
		t.Fatalf("UDP through the cluster IP: %q, want pod-1", got)
	}
	p.changes.slice(udpSlice(labSubnet+".4"), false)
	mustSync(t, p)
	if got := ask(); got != "pod-2" {
		t.Errorf("after the endpoint moved: %q, want pod-2 (stale conntrack entry kept?)", got)
	}
}

func udpSlice(ip string) *discovery.EndpointSlice {
	s := labSlice("dns", ip)
	s.Ports = []discovery.EndpointPort{{Name: new("dns"), Port: new(int32(5353)), Protocol: new(corev1.ProtocolUDP)}}
	return s
}
