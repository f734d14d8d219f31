package cni

import (
	"fmt"
	"net"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/utils"
)

// ifName is the pod's interface inside its namespace.
const ifName = "eth0"

// PortMapping publishes a container port on the node (a pod's hostPort).
type PortMapping struct {
	HostPort, ContainerPort int32
	Protocol                string // TCP|UDP|SCTP; empty is TCP
	HostIP                  string // empty: every node address
}

// Pod is what the network needs to know about a pod sandbox.
type Pod struct {
	ID                   string // sandbox id, also the netns name
	Namespace, Name, UID string
	Ports                []PortMapping // entries with HostPort 0 are not published
}

// portMapEntry is one element of the portMappings capability, as portmap reads it.
type portMapEntry struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// runtimeConf builds the libcni arguments for pod in the namespace at netnsPath.
// Ports are validated here, because portmap rejects bad ones on DEL as well as on
// ADD, which would leave a half-made attachment that cannot be deleted.
func runtimeConf(pod Pod, netnsPath string) (*libcni.RuntimeConf, error) {
	ports, err := portMappings(pod.Ports)
	if err != nil {
		return nil, err
	}
	rt := bareRuntimeConf(pod.ID, netnsPath)
	rt.Args = [][2]string{
		{"IgnoreUnknown", "1"},
		{"K8S_POD_NAMESPACE", pod.Namespace},
		{"K8S_POD_NAME", pod.Name},
		{"K8S_POD_INFRA_CONTAINER_ID", pod.ID},
		{"K8S_POD_UID", pod.UID},
	}
	if len(ports) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": ports}
	}
	return rt, nil
}

// bareRuntimeConf is the key of an attachment in the libcni cache; DEL fills in
// the rest from there.
func bareRuntimeConf(id, netnsPath string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: id, NetNS: netnsPath, IfName: ifName}
}

func portMappings(ports []PortMapping) ([]portMapEntry, error) {
	var out []portMapEntry
	for _, p := range ports {
		if p.HostPort == 0 {
			continue
		}
		if p.HostPort < 0 || p.HostPort > 65535 || p.ContainerPort <= 0 || p.ContainerPort > 65535 {
			return nil, fmt.Errorf("invalid port mapping %d:%d", p.HostPort, p.ContainerPort)
		}
		proto := strings.ToLower(p.Protocol)
		switch proto {
		case "":
			proto = "tcp"
		case "tcp", "udp", "sctp":
		default:
			return nil, fmt.Errorf("invalid port mapping protocol %q", p.Protocol)
		}
		if p.HostIP != "" && net.ParseIP(p.HostIP) == nil {
			return nil, fmt.Errorf("invalid port mapping host ip %q", p.HostIP)
		}
		out = append(out, portMapEntry{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: proto, HostIP: p.HostIP})
	}
	return out, nil
}

// validateID accepts what CNI accepts as a container id; that also makes it a
// safe file name (no "/", no leading ".").
func validateID(id string) error {
	if e := utils.ValidateContainerID(id); e != nil {
		return fmt.Errorf("invalid sandbox id %q: %s", id, e.Msg)
	}
	return nil
}
