package endpoints

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// entry says that addr serves port (nil: the service has no ports), ready
// or not.
type entry struct {
	addr  corev1.EndpointAddress
	ready bool
	port  *corev1.EndpointPort
}

type addrKey struct {
	ip  string
	uid types.UID
}

type portKey struct {
	name        string
	port        int32
	protocol    corev1.Protocol
	appProtocol string
}

func keyOfPort(p *corev1.EndpointPort) portKey {
	if p == nil {
		return portKey{port: -1} // stands for "no ports"
	}
	k := portKey{name: p.Name, port: p.Port, protocol: p.Protocol}
	if p.AppProtocol != nil {
		k.appProtocol = *p.AppProtocol
	}
	return k
}

// repack groups entries into subsets the way the Endpoints API wants them:
// ports that are served by exactly the same addresses, with the same
// readiness, share one subset. An address that is ready for a port wins
// over the same address not ready. The output is sorted (subsets by their
// ports, addresses by IP then pod UID, ports by name, number, protocol),
// so that the same input always gives the same, comparable result.
func repack(entries []entry) []corev1.EndpointSubset {
	addrs := map[addrKey]corev1.EndpointAddress{}
	ports := map[portKey]*corev1.EndpointPort{}
	members := map[portKey]map[addrKey]bool{} // port → address → ready
	for _, e := range entries {
		ak := addrKey{ip: e.addr.IP}
		if e.addr.TargetRef != nil {
			ak.uid = e.addr.TargetRef.UID
		}
		pk := keyOfPort(e.port)
		addrs[ak], ports[pk] = e.addr, e.port
		if members[pk] == nil {
			members[pk] = map[addrKey]bool{}
		}
		members[pk][ak] = members[pk][ak] || e.ready
	}
	groups := map[string][]portKey{} // membership signature → ports
	for pk, m := range members {
		sig := signature(m)
		groups[sig] = append(groups[sig], pk)
	}
	out := make([]corev1.EndpointSubset, 0, len(groups))
	for _, pks := range groups {
		out = append(out, subset(addrs, ports, members[pks[0]], pks))
	}
	slices.SortFunc(out, func(a, b corev1.EndpointSubset) int { return cmp.Compare(firstPort(a), firstPort(b)) })
	return out
}

// signature names a set of addresses with their readiness.
func signature(m map[addrKey]bool) string {
	parts := make([]string, 0, len(m))
	for ak, ready := range m {
		parts = append(parts, fmt.Sprintf("%s/%s/%t", ak.ip, ak.uid, ready))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// subset builds the sorted subset of the addresses in m serving pks.
func subset(addrs map[addrKey]corev1.EndpointAddress, ports map[portKey]*corev1.EndpointPort, m map[addrKey]bool, pks []portKey) corev1.EndpointSubset {
	var ss corev1.EndpointSubset
	for ak, ready := range m {
		if ready {
			ss.Addresses = append(ss.Addresses, addrs[ak])
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, addrs[ak])
		}
	}
	for _, pk := range pks {
		if p := ports[pk]; p != nil {
			ss.Ports = append(ss.Ports, *p)
		}
	}
	slices.SortFunc(ss.Addresses, compareAddresses)
	slices.SortFunc(ss.NotReadyAddresses, compareAddresses)
	slices.SortFunc(ss.Ports, func(a, b corev1.EndpointPort) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	return ss
}

func compareAddresses(a, b corev1.EndpointAddress) int {
	var ua, ub types.UID
	if a.TargetRef != nil {
		ua = a.TargetRef.UID
	}
	if b.TargetRef != nil {
		ub = b.TargetRef.UID
	}
	return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(ua, ub))
}

// firstPort orders subsets: every port is in one subset only, so the first
// (sorted) port of each tells them apart.
func firstPort(ss corev1.EndpointSubset) string {
	if len(ss.Ports) == 0 {
		return ""
	}
	p := ss.Ports[0]
	return fmt.Sprintf("%s/%010d/%s", p.Name, p.Port, p.Protocol)
}
