package proxy

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// ruleConfig is what the rules need to know of the node.
type ruleConfig struct {
	// podCIDR holds this node's pods: their traffic to a cluster IP is not
	// masqueraded, and under an external Local policy it still goes to
	// every endpoint.
	podCIDR string
	// serviceCIDR is rejected where no service answers, so that nothing
	// meant for a service follows the default route off the node.
	serviceCIDR string
	// localDNS is the cluster DNS address, answered on the node itself: it
	// is neither routed nor rejected.
	localDNS string
}

// state is what the rules are computed from: the service ports and their
// endpoints (byService: the ports of each service).
type state struct {
	ports     map[portName]servicePort
	endpoints map[portName][]endpoint
	byService map[types.NamespacedName][]portName
}

// table is one table's part of a restore payload: chain declarations
// (under --noflush a declared chain is created or flushed), rules, and
// deletions of chains no longer used.
type table struct {
	chains, rules, deletes bytes.Buffer
	count                  int
	declared               map[string]bool
}

// declare declares chain once; it reports whether this call did.
func (t *table) declare(chain string) bool {
	if t.declared[chain] {
		return false
	}
	if t.declared == nil {
		t.declared = map[string]bool{}
	}
	t.declared[chain] = true
	t.chains.WriteString(":" + chain + " - [0:0]\n")
	return true
}

// add appends a rule to chain. Arguments are written as they are: a
// comment with spaces is passed through comment().
func (t *table) add(chain string, args ...string) {
	t.rules.WriteString("-A ")
	t.rules.WriteString(chain)
	for _, a := range args {
		t.rules.WriteByte(' ')
		t.rules.WriteString(a)
	}
	t.rules.WriteByte('\n')
	t.count++
}

func (t *table) write(buf *bytes.Buffer, name string) {
	buf.WriteString("*" + name + "\n")
	buf.Write(t.chains.Bytes())
	buf.Write(t.rules.Bytes())
	buf.Write(t.deletes.Bytes())
	buf.WriteString("COMMIT\n")
}

// ruleSet is one sync's iptables-restore input, for the nat and filter
// tables, and the service chains in place once it is applied.
type ruleSet struct {
	nat, filter table
	// active holds every service chain the rules use, written by this
	// payload or left in place from before.
	active map[string]bool
}

// payload is the input of one iptables-restore --noflush.
func (rs *ruleSet) payload() []byte {
	var buf bytes.Buffer
	rs.nat.write(&buf, "nat")
	rs.filter.write(&buf, "filter")
	return buf.Bytes()
}

// rules counts the rules the payload writes.
func (rs *ruleSet) rules() int { return rs.nat.count + rs.filter.count }

// planRules computes the rules for st. The top-level chains are always
// written whole; a service port's own chains only when full or when the
// port is in changed (kube-proxy's minimized restore: the chains of
// unchanged services stay as the kernel has them). Chains of prev, the
// service chains in place before, that st no longer uses are deleted.
func planRules(cfg ruleConfig, st *state, changed map[portName]bool, full bool, prev map[string]bool) *ruleSet {
	rs := &ruleSet{active: map[string]bool{}}
	for _, c := range []string{chainServices, chainNodePorts, chainPostrouting, chainMarkMasq} {
		rs.nat.declare(c)
	}
	for _, c := range []string{chainServices, chainExternalServices, chainForward, chainFirewall} {
		rs.filter.declare(c)
	}
	names := make([]portName, 0, len(st.ports))
	for n := range st.ports {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b portName) int {
		return strings.Compare(a.String()+string(a.protocol), b.String()+string(b.protocol))
	})
	for _, n := range names {
		g := portRules{cfg: cfg, rs: rs, sp: st.ports[n], write: full || changed[n]}
		g.plan(st.endpoints[n])
	}
	fixedRules(cfg, rs)
	for c := range prev {
		if !rs.active[c] {
			rs.nat.declare(c)
			rs.nat.deletes.WriteString("-X " + c + "\n")
		}
	}
	return rs
}

// fixedRules writes the rules that do not depend on the services: the
// node-port jump last in KUBE-SERVICES, masquerading, forwarding, the
// service CIDR's catch-all reject and the localhost node-port guard.
func fixedRules(cfg ruleConfig, rs *ruleSet) {
	rs.nat.add(chainServices, comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain"),
		"-m addrtype --dst-type LOCAL -j", chainNodePorts)
	rs.nat.add(chainMarkMasq, "-j MARK --or-mark", masqMark)
	rs.nat.add(chainPostrouting, "-m mark ! --mark", masqMark+"/"+masqMark, "-j RETURN")
	rs.nat.add(chainPostrouting, "-j MARK --xor-mark", masqMark)
	rs.nat.add(chainPostrouting, comment("kubernetes service traffic requiring SNAT"), "-j MASQUERADE --random-fully")
	rs.filter.add(chainForward, "-m conntrack --ctstate INVALID -j DROP")
	rs.filter.add(chainForward, comment("kubernetes forwarding rules"), "-m mark --mark", masqMark+"/"+masqMark, "-j ACCEPT")
	rs.filter.add(chainForward, comment("kubernetes forwarding conntrack rule"), "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT")
	rs.filter.add(chainFirewall, "! -s 127.0.0.0/8 -d 127.0.0.0/8", comment("block incoming localnet connections"),
		"-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP")
	if cfg.serviceCIDR == "" {
		return
	}
	if cfg.localDNS != "" {
		rs.filter.add(chainServices, comment("cluster DNS, answered on this node"), "-d", cfg.localDNS+"/32 -j RETURN")
	}
	rs.filter.add(chainServices, comment("no service at this address"), "-d", cfg.serviceCIDR, "-j REJECT")
}

// portRules writes the rules of one service port.
type portRules struct {
	cfg   ruleConfig
	rs    *ruleSet
	sp    servicePort
	write bool // write the port's own chains, not only its top-level rules
}

// plan writes the port's entries in the top-level chains and, when
// g.write, its own chains: KUBE-SVC (every usable endpoint), KUBE-SVL (this
// node's, for a Local policy), KUBE-EXT (node ports and external IPs) and a
// KUBE-SEP per endpoint. Without endpoints the filter table rejects the
// port at once; under a Local policy without local endpoints it drops.
func (g *portRules) plan(eps []endpoint) {
	sp := g.sp
	cluster, locals := usable(eps), usable(local(eps))
	svc, svl, ext := portChain(prefixService, sp.name), portChain(prefixLocalService, sp.name), portChain(prefixExternal, sp.name)
	internal, internalEPs := svc, cluster
	if sp.internalLocal {
		internal, internalEPs = svl, locals
	}
	externalEPs := cluster
	if sp.externalLocal {
		externalEPs = locals
	}
	if len(cluster) > 0 {
		g.endpointChain(svc, cluster, true)
	}
	if (sp.internalLocal || sp.externalLocal) && len(locals) > 0 {
		g.endpointChain(svl, locals, false)
	}
	g.clusterIP(internal, len(internalEPs) > 0, len(cluster) > 0)
	if len(sp.externalIPs) == 0 && sp.nodePort == 0 {
		return
	}
	if len(cluster) > 0 {
		g.externalChain(ext, svc, svl, len(locals) > 0)
	}
	g.external(ext, len(cluster) > 0, len(externalEPs) > 0)
}

// clusterIP routes the cluster IP to target, or has the filter table turn
// it away.
func (g *portRules) clusterIP(target string, routed, anyEndpoint bool) {
	sp := g.sp
	match := g.match("-d", sp.clusterIP+"/32", "--dport", portString(sp.port))
	if routed {
		g.rs.nat.add(chainServices, append([]string{comment(sp.name.String() + " cluster IP")}, append(match, "-j", target)...)...)
		return
	}
	g.rs.filter.add(chainServices, append([]string{g.noEndpoints(anyEndpoint)}, append(match, "-j", refusal(anyEndpoint))...)...)
}

// external routes node ports and external IPs to the KUBE-EXT chain, or
// has the filter table turn them away.
func (g *portRules) external(ext string, hasChain, routed bool) {
	sp := g.sp
	var matches [][]string
	for _, ip := range sp.externalIPs {
		matches = append(matches, g.match("-d", ip+"/32", "--dport", portString(sp.port)))
	}
	for _, m := range matches {
		if hasChain {
			g.rs.nat.add(chainServices, append([]string{comment(sp.name.String() + " external IP")}, append(m, "-j", ext)...)...)
		}
		if !routed {
			g.rs.filter.add(chainExternalServices, append([]string{g.noEndpoints(hasChain)}, append(m, "-j", refusal(hasChain))...)...)
		}
	}
	if sp.nodePort == 0 {
		return
	}
	np := g.match("--dport", portString(sp.nodePort))
	if hasChain {
		g.rs.nat.add(chainNodePorts, append([]string{comment(sp.name.String())}, append(np, "-j", ext)...)...)
	}
	if !routed {
		g.rs.filter.add(chainExternalServices, append([]string{g.noEndpoints(hasChain), "-m addrtype --dst-type LOCAL"}, append(np, "-j", refusal(hasChain))...)...)
	}
}

// externalChain writes KUBE-EXT: masquerade and every endpoint under the
// Cluster policy; under Local, this node's pods and the node itself still
// reach every endpoint (masqueraded for the node), everyone else only
// this node's endpoints, and nothing when there are none.
func (g *portRules) externalChain(ext, svc, svl string, hasLocal bool) {
	g.rs.active[ext] = true
	if !g.write {
		return
	}
	name := g.sp.name.String()
	g.rs.nat.declare(ext)
	if !g.sp.externalLocal {
		g.rs.nat.add(ext, comment("masquerade traffic for "+name+" external destinations"), "-j", chainMarkMasq)
		g.rs.nat.add(ext, "-j", svc)
		return
	}
	if g.cfg.podCIDR != "" {
		g.rs.nat.add(ext, comment("pod traffic for "+name+" external destinations"), "-s", g.cfg.podCIDR, "-j", svc)
	}
	g.rs.nat.add(ext, comment("masquerade LOCAL traffic for "+name+" external destinations"), "-m addrtype --src-type LOCAL -j", chainMarkMasq)
	g.rs.nat.add(ext, comment("route LOCAL traffic for "+name+" external destinations"), "-m addrtype --src-type LOCAL -j", svc)
	if hasLocal {
		g.rs.nat.add(ext, "-j", svl)
	}
}

// endpointChain writes chain (KUBE-SVC or KUBE-SVL) spreading over eps at
// random, after session affinity, and each endpoint's KUBE-SEP. The
// KUBE-SVC chain first marks for masquerade what comes from outside the
// node's pods to the cluster IP.
func (g *portRules) endpointChain(chain string, eps []endpoint, masq bool) {
	sp := g.sp
	g.rs.active[chain] = true
	seps := make([]string, len(eps))
	for i, e := range eps {
		seps[i] = endpointChain(sp.name, e)
		g.rs.active[seps[i]] = true
	}
	if !g.write {
		return
	}
	g.rs.nat.declare(chain)
	name := sp.name.String()
	if masq && g.cfg.podCIDR != "" {
		g.rs.nat.add(chain, append([]string{comment(name + " cluster IP")}, append(g.match("-d", sp.clusterIP+"/32", "--dport", portString(sp.port)),
			"! -s", g.cfg.podCIDR, "-j", chainMarkMasq)...)...)
	}
	if sp.affinity > 0 {
		for i, e := range eps {
			g.rs.nat.add(chain, comment(name+" -> "+e.String()), "-m recent --name", seps[i], "--rcheck --seconds",
				strconv.Itoa(int(sp.affinity)), "--reap -j", seps[i])
		}
	}
	for i, e := range eps {
		if left := len(eps) - i; left > 1 {
			g.rs.nat.add(chain, comment(name+" -> "+e.String()), "-m statistic --mode random --probability",
				strconv.FormatFloat(1/float64(left), 'f', 10, 64), "-j", seps[i])
		} else {
			g.rs.nat.add(chain, comment(name+" -> "+e.String()), "-j", seps[i])
		}
		g.endpoint(seps[i], e)
	}
}

// endpoint writes a KUBE-SEP chain: hairpin traffic (the endpoint reaching
// itself) is masqueraded, everything is DNATed to the endpoint.
func (g *portRules) endpoint(sep string, e endpoint) {
	if !g.rs.nat.declare(sep) {
		return // already written for the other chain (KUBE-SVC and KUBE-SVL share endpoints)
	}
	name := comment(g.sp.name.String())
	g.rs.nat.add(sep, name, "-s", e.ip+"/32 -j", chainMarkMasq)
	args := append([]string{name}, g.match()...)
	if g.sp.affinity > 0 {
		args = append(args, "-m recent --name", sep, "--set")
	}
	g.rs.nat.add(sep, append(args, "-j DNAT --to-destination", e.String())...)
}

// match is the protocol match with extra matches after it.
func (g *portRules) match(extra ...string) []string {
	p := strings.ToLower(string(g.sp.name.protocol))
	return append([]string{"-m", p, "-p", p}, extra...)
}

func (g *portRules) noEndpoints(anyEndpoint bool) string {
	if anyEndpoint {
		return comment(g.sp.name.String() + " has no local endpoints")
	}
	return comment(g.sp.name.String() + " has no endpoints")
}

// refusal is how the filter table turns traffic away: REJECT (the client
// sees "connection refused" at once) when the port has no endpoint at all,
// DROP when it has some but none this traffic may use (Local policies), as
// kube-proxy does.
func refusal(anyEndpoint bool) string {
	if anyEndpoint {
		return "DROP"
	}
	return "REJECT"
}

// comment is an iptables comment match, quoted for iptables-restore.
func comment(text string) string {
	return `-m comment --comment "` + text + `"`
}
