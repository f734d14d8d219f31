package proxy

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var testRuleConfig = ruleConfig{podCIDR: "10.244.1.0/24", serviceCIDR: "10.96.0.0/16", localDNS: "10.96.0.10"}

func port(ns, name, port string, edit ...func(*servicePort)) servicePort {
	sp := servicePort{name: portName{service: types.NamespacedName{Namespace: ns, Name: name}, port: port, protocol: corev1.ProtocolTCP},
		clusterIP: "10.96.0.20", port: 80}
	for _, e := range edit {
		e(&sp)
	}
	return sp
}

func ep(ip string, edit ...func(*endpoint)) endpoint {
	e := endpoint{ip: ip, port: 8080, ready: true, serving: true}
	for _, f := range edit {
		f(&e)
	}
	return e
}

func onNode(e *endpoint)   { e.local = true }
func notReady(e *endpoint) { e.ready, e.serving = false, false }
func draining(e *endpoint) { e.ready, e.serving, e.terminating = false, true, true }

func oneService(sp servicePort, eps ...endpoint) *state {
	return &state{ports: map[portName]servicePort{sp.name: sp}, endpoints: map[portName][]endpoint{sp.name: eps}}
}

// TestRulesGolden checks the whole restore payload of a full sync for each
// kind of service against testdata/<name>.golden (go test -update rewrites
// them).
func TestRulesGolden(t *testing.T) {
	three := []endpoint{ep("10.244.1.5", onNode), ep("10.244.2.6"), ep("10.244.3.7")}
	for _, tc := range []struct {
		name string
		st   *state
	}{
		{"clusterip", oneService(port("shop", "web", "http"), three...)},
		{"nodeport", oneService(port("shop", "web", "", func(sp *servicePort) {
			sp.nodePort, sp.externalIPs = 30080, []string{"192.0.2.10"}
		}), three...)},
		{"affinity", oneService(port("shop", "web", "", func(sp *servicePort) { sp.affinity = 10800 }), three[:2]...)},
		{"external-local", oneService(port("shop", "web", "", func(sp *servicePort) {
			sp.nodePort, sp.externalLocal, sp.healthCheckNodePort = 30080, true, 31000
		}), three...)},
		{"external-local-none-here", oneService(port("shop", "web", "", func(sp *servicePort) {
			sp.nodePort, sp.externalLocal = 30080, true
		}), three[1:]...)},
		{"internal-local", oneService(port("shop", "web", "", func(sp *servicePort) { sp.internalLocal = true }), three...)},
		{"no-endpoints", oneService(port("shop", "web", "", func(sp *servicePort) { sp.nodePort = 30080 }),
			ep("10.244.1.5", notReady))},
		{"terminating-only", oneService(port("shop", "web", ""), ep("10.244.1.5", draining), ep("10.244.2.6", notReady))},
		{"udp", oneService(port("kube-system", "dns", "dns", func(sp *servicePort) { sp.name.protocol = corev1.ProtocolUDP }), three[:1]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planRules(testRuleConfig, tc.st, nil, true, nil, nil).payload()
			golden(t, filepath.Join("testdata", tc.name+".golden"), got)
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("payload differs from %s:\n%s", path, got)
	}
}
