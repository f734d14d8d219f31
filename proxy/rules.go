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
	// large leaves the comments out of the endpoints' rules, as kube-proxy
	// does beyond largeClusterEndpoints: less for iptables-restore to
	// parse and for the kernel to validate on every commit.
	large bool
}

// largeClusterEndpoints is kube-proxy's threshold of its large cluster
// mode.
const largeClusterEndpoints = 1000

// state is what the rules are computed from: the service ports and their
// endpoints (byService: the ports of each service).
type state struct {
	ports     map[portName]servicePort
	endpoints map[portName][]endpoint
	byService map[types.NamespacedName][]portName
	// ready are the pods that became ready endpoints since the last
	// successful sync (for Config.Synced).
	ready []ReadyPod
}

// table is one table's part of a restore payload: chain declarations
// (under --noflush a declared chain is created or flushed), appended rules,
// rule deletions and insertions in chains not rewritten, and deletions of
// chains no longer used.
type table struct {
	chains, rules, edits, deletes bytes.Buffer
	count                         int
	declared                      map[string]bool
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
	t.line(&t.rules, "-A "+chain, strings.Join(args, " "))
}

func (t *table) line(buf *bytes.Buffer, op, spec string) {
	buf.WriteString(op)
	buf.WriteByte(' ')
	buf.WriteString(spec)
	buf.WriteByte('\n')
	t.count++
}

// listAll opens a full sync's tables. A command naming no chain makes
// iptables-nft (1.8.9) read the whole table at once; otherwise it collects
// the chains a payload names in a sorted list, one insertion per line, which
// grows with the square of the chains (5.4 s instead of 0.9 s for 1,000
// services). -S only prints the table as it was, to an output nobody reads.
const listAll = "-S\n"

func (t *table) write(buf *bytes.Buffer, name string, full bool) {
	buf.WriteString("*" + name + "\n")
	if full {
		buf.WriteString(listAll)
	}
	buf.Write(t.chains.Bytes())
	buf.Write(t.rules.Bytes())
	buf.Write(t.edits.Bytes())
	buf.Write(t.deletes.Bytes())
	buf.WriteString("COMMIT\n")
}

// topRule is a service port's rule in a top-level chain (KUBE-SERVICES,
// KUBE-NODEPORTS, KUBE-EXTERNAL-SERVICES).
type topRule struct {
	filter bool // in the filter table, else nat
	chain  string
	spec   string
}

// portOutput is what one service port has in the kernel: its rules in the
// top-level chains and its own chains.
type portOutput struct {
	top    []topRule
	chains []string
}

// ruleSet is one sync's iptables-restore input, for the nat and filter
// tables, and what every service port has in the kernel once it is
// applied.
type ruleSet struct {
	nat, filter table
	full        bool
	ports       map[portName]portOutput
}

func (rs *ruleSet) table(filter bool) *table {
	if filter {
		return &rs.filter
	}
	return &rs.nat
}

// payload is the input of one iptables-restore --noflush.
func (rs *ruleSet) payload() []byte {
	var buf bytes.Buffer
	rs.nat.write(&buf, "nat", rs.full)
	rs.filter.write(&buf, "filter", rs.full)
	return buf.Bytes()
}

// rules counts the rules the payload writes, deletes or inserts.
func (rs *ruleSet) rules() int { return rs.nat.count + rs.filter.count }

// chainsOf returns every service chain of ports.
func chainsOf(ports map[portName]portOutput) map[string]bool {
	out := map[string]bool{}
	for _, po := range ports {
		for _, c := range po.chains {
			out[c] = true
		}
	}
	return out
}

// planRules computes the rules for st. A full sync writes every chain and
// deletes the service chains of inKernel that st no longer uses. A partial
// sync (kube-proxy's minimized restore, carried further) touches only the
// ports in changed: their own chains are rewritten, their rules in the
// top-level chains deleted and inserted one by one against prev (what each
// port had after the last sync), and chains they no longer use deleted;
// the top-level chains themselves are not rewritten, so a sync's cost
// follows what changed, not how many services there are.
func planRules(cfg ruleConfig, st *state, changed map[portName]bool, full bool, prev map[portName]portOutput, inKernel map[string]bool) *ruleSet {
	rs := &ruleSet{full: full, ports: make(map[portName]portOutput, len(st.ports))}
	if full {
		for _, c := range []string{chainServices, chainNodePorts, chainPostrouting, chainMarkMasq} {
			rs.nat.declare(c)
		}
		for _, c := range []string{chainServices, chainExternalServices, chainForward, chainFirewall} {
			rs.filter.declare(c)
		}
		for _, n := range sortedPorts(st) {
			out := planPort(cfg, rs, st, n)
			for _, r := range out.top {
				rs.table(r.filter).line(&rs.table(r.filter).rules, "-A "+r.chain, r.spec)
			}
			rs.ports[n] = out
		}
		fixedRules(cfg, rs)
		deleteChains(rs, inKernel, chainsOf(rs.ports))
		return rs
	}
	for n, po := range prev {
		rs.ports[n] = po
	}
	for n := range changed {
		old := prev[n]
		out := portOutput{}
		if _, ok := st.ports[n]; ok {
			out = planPort(cfg, rs, st, n)
			rs.ports[n] = out
		} else {
			delete(rs.ports, n)
		}
		editTop(rs, old.top, out.top)
		deleteChains(rs, setOf(old.chains), setOf(out.chains))
	}
	return rs
}

func sortedPorts(st *state) []portName {
	names := make([]portName, 0, len(st.ports))
	for n := range st.ports {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b portName) int {
		return strings.Compare(a.String()+string(a.protocol), b.String()+string(b.protocol))
	})
	return names
}

// planPort writes the own chains of port n and returns its output.
func planPort(cfg ruleConfig, rs *ruleSet, st *state, n portName) portOutput {
	g := portRules{cfg: cfg, rs: rs, sp: st.ports[n]}
	g.plan(st.endpoints[n])
	return g.out
}

// editTop deletes a port's old top-level rules that are gone and inserts
// the new ones first in their chains, where order among services does not
// matter and the fixed rules stay last.
func editTop(rs *ruleSet, old, cur []topRule) {
	for _, r := range old {
		if !slices.Contains(cur, r) {
			t := rs.table(r.filter)
			t.line(&t.edits, "-D "+r.chain, r.spec)
		}
	}
	for _, r := range cur {
		if !slices.Contains(old, r) {
			t := rs.table(r.filter)
			t.line(&t.edits, "-I "+r.chain+" 1", r.spec)
		}
	}
}

// deleteChains deletes the chains of had that keep does not hold.
func deleteChains(rs *ruleSet, had, keep map[string]bool) {
	for c := range had {
		if !keep[c] {
			rs.nat.declare(c)
			rs.nat.deletes.WriteString("-X " + c + "\n")
		}
	}
}

func setOf(items []string) map[string]bool {
	out := make(map[string]bool, len(items))
	for _, s := range items {
		out[s] = true
	}
	return out
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
	cfg ruleConfig
	rs  *ruleSet
	sp  servicePort
	out portOutput
}

// top records a rule of the port in a top-level chain.
func (g *portRules) top(filter bool, chain string, args ...string) {
	g.out.top = append(g.out.top, topRule{filter: filter, chain: chain, spec: strings.Join(args, " ")})
}

// use records a chain of the port's own.
func (g *portRules) use(chain string) {
	if !slices.Contains(g.out.chains, chain) {
		g.out.chains = append(g.out.chains, chain)
	}
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
		g.top(false, chainServices, append([]string{comment(sp.name.String() + " cluster IP")}, append(match, "-j", target)...)...)
		return
	}
	g.top(true, chainServices, append([]string{g.noEndpoints(anyEndpoint)}, append(match, "-j", refusal(anyEndpoint))...)...)
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
			g.top(false, chainServices, append([]string{comment(sp.name.String() + " external IP")}, append(m, "-j", ext)...)...)
		}
		if !routed {
			g.top(true, chainExternalServices, append([]string{g.noEndpoints(hasChain)}, append(m, "-j", refusal(hasChain))...)...)
		}
	}
	if sp.nodePort == 0 {
		return
	}
	np := g.match("--dport", portString(sp.nodePort))
	if hasChain {
		g.top(false, chainNodePorts, append([]string{comment(sp.name.String())}, append(np, "-j", ext)...)...)
	}
	if !routed {
		g.top(true, chainExternalServices, append([]string{g.noEndpoints(hasChain), "-m addrtype --dst-type LOCAL"}, append(np, "-j", refusal(hasChain))...)...)
	}
}

// externalChain writes KUBE-EXT: masquerade and every endpoint under the
// Cluster policy; under Local, this node's pods and the node itself still
// reach every endpoint (masqueraded for the node), everyone else only
// this node's endpoints, and nothing when there are none.
func (g *portRules) externalChain(ext, svc, svl string, hasLocal bool) {
	g.use(ext)
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
// random, after session affinity. The KUBE-SVC chain first marks for
// masquerade what comes from outside the node's pods to the cluster IP.
func (g *portRules) endpointChain(chain string, eps []endpoint, masq bool) {
	sp := g.sp
	g.use(chain)
	seps := make([]string, len(eps))
	for i, e := range eps {
		seps[i] = endpointChain(sp.name, e)
		if e.local {
			g.use(seps[i])
		}
	}
	g.rs.nat.declare(chain)
	name := sp.name.String()
	if masq && g.cfg.podCIDR != "" {
		g.rs.nat.add(chain, append([]string{comment(name + " cluster IP")}, append(g.match("-d", sp.clusterIP+"/32", "--dport", portString(sp.port)),
			"! -s", g.cfg.podCIDR, "-j", chainMarkMasq)...)...)
	}
	if sp.affinity > 0 {
		for i, e := range eps {
			// A DNAT in place refreshes the client's entry as a KUBE-SEP
			// chain's --set does.
			check := "--rcheck"
			if !e.local {
				check = "--update"
			}
			args := append(g.endpointComment(name+" -> "+e.String()), "-m recent --name", seps[i], check, "--seconds",
				strconv.Itoa(int(sp.affinity)), "--reap")
			g.rs.nat.add(chain, append(args, g.to(seps[i], e, false)...)...)
		}
	}
	for i, e := range eps {
		args := g.endpointComment(name + " -> " + e.String())
		if left := len(eps) - i; left > 1 {
			args = append(args, "-m statistic --mode random --probability", strconv.FormatFloat(1/float64(left), 'f', 10, 64))
		}
		g.rs.nat.add(chain, append(args, g.to(seps[i], e, true)...)...)
		if e.local {
			g.endpoint(seps[i], e)
		}
	}
}

// to sends traffic to endpoint e: an endpoint on this node through its
// KUBE-SEP chain, which masquerades the endpoint reaching itself (hairpin);
// any other endpoint, which can never be the source of traffic through
// this node's rules, by the DNAT in place (one chain fewer per endpoint:
// iptables-restore's costs grow with the chains of a table). set records
// the client for session affinity.
func (g *portRules) to(sep string, e endpoint, set bool) []string {
	if e.local {
		return []string{"-j", sep}
	}
	return g.dnat(sep, e, set)
}

// dnat is the DNAT to e, after recording the client under sep's name for
// session affinity when set.
func (g *portRules) dnat(sep string, e endpoint, set bool) []string {
	args := g.match()
	if set && g.sp.affinity > 0 {
		args = append(args, "-m recent --name", sep, "--set")
	}
	return append(args, "-j DNAT --to-destination", e.String())
}

// endpoint writes a KUBE-SEP chain: hairpin traffic (the endpoint reaching
// itself) is masqueraded, everything is DNATed to the endpoint.
func (g *portRules) endpoint(sep string, e endpoint) {
	if !g.rs.nat.declare(sep) {
		return // already written for the other chain (KUBE-SVC and KUBE-SVL share endpoints)
	}
	name := g.endpointComment(g.sp.name.String())
	g.rs.nat.add(sep, append(name, "-s", e.ip+"/32 -j", chainMarkMasq)...)
	g.rs.nat.add(sep, append(name, g.dnat(sep, e, true)...)...)
}

// endpointComment is the comment of an endpoint's rules; none in a large
// cluster.
func (g *portRules) endpointComment(text string) []string {
	if g.cfg.large {
		return nil
	}
	return []string{comment(text)}
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
