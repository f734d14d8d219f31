package proxy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

func changedNames(changed map[portName]bool) []string {
	var out []string
	for n := range changed {
		out = append(out, n.String()+"/"+string(n.protocol))
	}
	slices.Sort(out)
	return out
}

// TestChangesTouchOnlyWhatChanged plays informer events into the change
// tracker and checks which service ports each sync rewrites.
func TestChangesTouchOnlyWhatChanged(t *testing.T) {
	c := newChanges(func() {})
	st := newState()
	sync := func() []string {
		changed, _ := st.apply(c.take(false), "n1", "10.96.0.10")
		return changedNames(changed)
	}
	c.service(labService("web", "10.96.0.20"), false)
	c.slice(labSlice("web", "10.244.1.2"), false)
	c.service(labService("api", "10.96.0.21"), false)
	if got := sync(); strings.Join(got, " ") != "default/api:http/TCP default/web:http/TCP" {
		t.Errorf("first sync changed %v", got)
	}
	if got := sync(); len(got) != 0 {
		t.Errorf("nothing happened, yet %v changed", got)
	}

	c.slice(labSlice("web", "10.244.1.2", "10.244.1.3"), false)
	if got := sync(); strings.Join(got, " ") != "default/web:http/TCP" {
		t.Errorf("an endpoint of web added: %v changed", got)
	}
	// The same slice again (a resync) changes nothing.
	c.slice(labSlice("web", "10.244.1.2", "10.244.1.3"), false)
	if got := sync(); len(got) != 0 {
		t.Errorf("an unchanged slice changed %v", got)
	}

	c.service(labService("api", "10.96.0.21", func(s *corev1.Service) { s.Spec.Ports[0].Name = "grpc" }), false)
	if got := sync(); strings.Join(got, " ") != "default/api:grpc/TCP default/api:http/TCP" {
		t.Errorf("a renamed port: %v changed, want the old and the new", got)
	}
	c.service(labService("api", "10.96.0.21"), true)
	if got := sync(); strings.Join(got, " ") != "default/api:grpc/TCP" || len(st.ports) != 1 {
		t.Errorf("api deleted: %v changed, %d ports left", got, len(st.ports))
	}

	c.service(labService("kube-dns", "10.96.0.10"), false)
	c.service(labService("headless", corev1.ClusterIPNone), false)
	if got := sync(); len(got) != 0 {
		t.Errorf("the cluster DNS address and a headless service are not proxied, yet %v changed", got)
	}
}

func TestEndpointsFromSlices(t *testing.T) {
	s := labSlice("web", "10.244.1.3", "10.244.1.2")
	s.Endpoints[0].Conditions = discovery.EndpointConditions{Ready: new(false), Serving: new(true), Terminating: new(true)}
	s.Endpoints[1].NodeName = new("n2")
	other := labSlice("web", "10.244.1.2")
	other.AddressType = discovery.AddressTypeIPv6
	name := portName{service: types.NamespacedName{Namespace: "default", Name: "web"}, port: "http", protocol: corev1.ProtocolTCP}
	got := endpointsFor([]*discovery.EndpointSlice{s, other}, name, "n1")
	want := []endpoint{
		{ip: "10.244.1.2", port: 8080, ready: true, serving: true},
		{ip: "10.244.1.3", port: 8080, serving: true, terminating: true, local: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("endpoints\n got %+v\nwant %+v", got, want)
	}
	if got := endpointsFor([]*discovery.EndpointSlice{s}, portName{service: name.service, port: "other", protocol: corev1.ProtocolTCP}, "n1"); len(got) != 0 {
		t.Errorf("a port the slice lacks has endpoints %v", got)
	}
}

func TestStaleUDPFlows(t *testing.T) {
	sp := port("kube-system", "dns", "dns", func(sp *servicePort) { sp.name.protocol = corev1.ProtocolUDP })
	a, b := ep("10.244.1.2"), ep("10.244.1.3")
	for _, tc := range []struct {
		name     string
		old, cur []endpoint
		want     []staleFlow
	}{
		{"first endpoint", nil, []endpoint{a}, []staleFlow{{serviceIP: "10.96.0.20", port: 80}}},
		{"endpoint left", []endpoint{a, b}, []endpoint{b}, []staleFlow{{serviceIP: "10.96.0.20", port: 80, endpoint: "10.244.1.2"}}},
		{"endpoint added", []endpoint{a}, []endpoint{a, b}, nil},
		{"endpoint not ready", []endpoint{a}, []endpoint{ep("10.244.1.2", notReady)}, []staleFlow{{serviceIP: "10.96.0.20", port: 80, endpoint: "10.244.1.2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleUDP(sp, tc.old, tc.cur); !slices.Equal(got, tc.want) {
				t.Errorf("stale %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPartialRules checks that a partial sync touches the changed ports
// only: their own chains rewritten, their top-level rules deleted and
// inserted one by one, the top-level chains left as they are.
func TestPartialRules(t *testing.T) {
	web, api := port("default", "web", "http"), port("default", "api", "http", func(sp *servicePort) { sp.clusterIP = "10.96.0.21" })
	st := &state{
		ports:     map[portName]servicePort{web.name: web, api.name: api},
		endpoints: map[portName][]endpoint{web.name: {ep("10.244.1.2", onNode)}, api.name: {ep("10.244.1.3", onNode)}},
	}
	full := planRules(testRuleConfig, st, nil, true, nil, nil)
	apiSVC, webSVC := portChain(prefixService, api.name), portChain(prefixService, web.name)
	oldSEP, newSEP := endpointChain(web.name, ep("10.244.1.2")), endpointChain(web.name, ep("10.244.1.4"))

	st.endpoints[web.name] = []endpoint{ep("10.244.1.4", onNode)}
	oneEndpoint := planRules(testRuleConfig, st, map[portName]bool{web.name: true}, false, full.ports, nil)
	expectPayload(t, "one endpoint changed", oneEndpoint,
		[]string{":" + webSVC, ":" + newSEP, "-X " + oldSEP},
		[]string{":KUBE-SERVICES", "-A KUBE-SERVICES", "-D KUBE-SERVICES", apiSVC})
	if chains := chainsOf(oneEndpoint.ports); !chains[apiSVC] || chains[oldSEP] || !chains[newSEP] {
		t.Errorf("chains in use %v", chains)
	}

	st.endpoints[web.name] = append(st.endpoints[web.name], ep("10.244.2.5"))
	remote := planRules(testRuleConfig, st, map[portName]bool{web.name: true}, false, oneEndpoint.ports, nil)
	expectPayload(t, "an endpoint on another node added", remote,
		[]string{":" + webSVC, ":" + newSEP, "-j DNAT --to-destination 10.244.2.5:8080"},
		[]string{endpointChain(web.name, ep("10.244.2.5")), "-X ", "KUBE-SERVICES", apiSVC})

	delete(st.endpoints, web.name)
	noEndpoints := planRules(testRuleConfig, st, map[portName]bool{web.name: true}, false, remote.ports, nil)
	expectPayload(t, "last endpoint gone", noEndpoints,
		[]string{"-D KUBE-SERVICES " + comment("default/web:http cluster IP"), "-I KUBE-SERVICES 1 " + comment("default/web:http has no endpoints"),
			"-X " + webSVC, "-X " + newSEP},
		[]string{":KUBE-SERVICES", apiSVC})

	delete(st.ports, api.name)
	gone := planRules(testRuleConfig, st, map[portName]bool{api.name: true}, false, noEndpoints.ports, nil)
	expectPayload(t, "service deleted", gone,
		[]string{"-D KUBE-SERVICES " + comment("default/api:http cluster IP"), "-X " + apiSVC},
		[]string{":KUBE-SERVICES", "-I "})
	if _, ok := gone.ports[api.name]; ok || len(gone.ports) != 1 {
		t.Errorf("ports after the delete: %v", gone.ports)
	}
}

func expectPayload(t *testing.T, what string, rs *ruleSet, want, notWant []string) {
	t.Helper()
	text := string(rs.payload())
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s: payload lacks %q:\n%s", what, w, text)
		}
	}
	for _, w := range notWant {
		if strings.Contains(text, w) {
			t.Errorf("%s: payload has %q:\n%s", what, w, text)
		}
	}
}
