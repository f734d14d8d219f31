package proxy

import (
	"crypto/sha256"
	"encoding/base32"
)

// The chains of kube-proxy's iptables mode, so that iptables-save reads
// as it does on any Kubernetes node.
const (
	chainServices         = "KUBE-SERVICES"          // nat: cluster and external IPs; filter: rejects
	chainNodePorts        = "KUBE-NODEPORTS"         // nat: node ports
	chainExternalServices = "KUBE-EXTERNAL-SERVICES" // filter: node ports and external IPs without endpoints
	chainPostrouting      = "KUBE-POSTROUTING"       // nat: masquerade what KUBE-MARK-MASQ marked
	chainMarkMasq         = "KUBE-MARK-MASQ"
	chainForward          = "KUBE-FORWARD"  // filter: accept service traffic being forwarded
	chainFirewall         = "KUBE-FIREWALL" // filter: no martian traffic to 127.0.0.0/8 node ports

	prefixService      = "KUBE-SVC-" // cluster-wide endpoints of a service port
	prefixLocalService = "KUBE-SVL-" // this node's endpoints of a service port
	prefixExternal     = "KUBE-EXT-" // traffic from outside, to a node port or external IP
	prefixEndpoint     = "KUBE-SEP-" // one endpoint: DNAT

	// masqMark is the packet mark of traffic to masquerade, kube-proxy's.
	masqMark = "0x4000"
)

// portChain names a chain of a service port: prefix and a hash of the
// port's name and protocol, short enough for iptables' 28 characters and
// the same on every node and after every restart, as kube-proxy names them.
func portChain(prefix string, p portName) string {
	return prefix + hash(p.String()+string(p.protocol))
}

// endpointChain names the chain of one endpoint of a service port.
func endpointChain(p portName, e endpoint) string {
	return prefixEndpoint + hash(p.String()+string(p.protocol)+e.String())
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}
