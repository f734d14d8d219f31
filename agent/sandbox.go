package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
)

// createSandbox removes what is left of older sandboxes, then starts the
// pod's sandbox (if its RuntimeClass's handler is this node's). A host-network pod's sandbox runs in the node's network,
// with the node's IP and no CNI. Any other pod gets a network namespace
// that is attached (CNI ADD) while the pause container starts in it. On
// failure everything is undone and FailedCreatePodSandBox is reported.
func (s *podSync) createSandbox(ctx context.Context, st podState) error {
	for _, old := range st.sandboxes {
		if err := s.removeSandbox(ctx, old.ID); err != nil {
			return err
		}
	}
	if err := s.checkRuntimeHandler(ctx); err != nil {
		return s.sandboxFailed(err)
	}
	if err := s.a.rt.SetPodResources(string(s.pod.UID), podCgroupResources(withAllocation(s.pod, s.alloc))); err != nil {
		return s.sandboxFailed(err)
	}
	spec, err := s.sandboxSpec()
	if err != nil {
		return s.sandboxFailed(err)
	}
	if spec.Host.Network {
		spec.IPs = []string{s.a.nodeIP}
		if err := s.a.rt.RunSandbox(ctx, spec); err != nil {
			return s.sandboxFailed(err)
		}
		s.podIP = s.a.nodeIP
		return nil
	}
	return s.runAttached(ctx, spec)
}

// sandboxSpec is the pod's sandbox under a new ID: the node namespaces it
// shares, its sysctls (refused as the kubelet's admission would), and
// whether any of its containers is privileged.
func (s *podSync) sandboxSpec() (cri.SandboxSpec, error) {
	sysctls, err := podSysctls(s.pod)
	if err != nil {
		return cri.SandboxSpec{}, err
	}
	host := cri.HostNamespaces{Network: s.pod.Spec.HostNetwork, PID: s.pod.Spec.HostPID, IPC: s.pod.Spec.HostIPC}
	return cri.SandboxSpec{Pod: s.ref, ID: cri.NewID(), Image: s.a.pauseImage, Hostname: podHostname(s.pod),
		Host: host, Sysctls: sysctls, Privileged: hasPrivilegedContainer(s.pod)}, nil
}

// runAttached creates the sandbox's network namespace, then at the same time
// attaches it (CNI ADD) and starts the sandbox in it. On failure both are
// undone.
func (s *podSync) runAttached(ctx context.Context, spec cri.SandboxSpec) error {
	if s.a.podCIDR.Load() == nil {
		return s.sandboxFailed(errNoPodCIDR)
	}
	id := spec.ID
	path, err := s.a.net.CreateNetNS(id)
	if err != nil {
		return s.sandboxFailed(err)
	}
	spec.NetNS = path
	var res cni.Result
	var netErr error
	attached := make(chan struct{})
	go func() {
		defer close(attached)
		start := time.Now()
		res, netErr = s.a.net.Setup(ctx, cni.Pod{ID: id, Namespace: s.pod.Namespace, Name: s.pod.Name, UID: string(s.pod.UID), Ports: hostPorts(s.pod)})
		s.a.pods.starts.mark(s.pod.UID, stepNetwork)
		s.a.pods.starts.span(s.pod.UID, "agent.network", start, time.Now(), netErr, attribute.String("ip", strings.Join(ipStrings(res.IPs), ",")))
	}()
	runErr := s.a.rt.RunSandbox(ctx, spec)
	s.a.pods.starts.mark(s.pod.UID, stepPause)
	<-attached
	if netErr == nil && runErr == nil {
		runErr = s.a.rt.SetSandboxIPs(ctx, id, ipStrings(res.IPs))
	}
	if err := errors.Join(netErr, runErr); err != nil {
		_ = s.a.rt.RemoveContainer(ctx, id)
		_ = s.a.net.Teardown(ctx, id)
		return s.sandboxFailed(err)
	}
	if len(res.IPs) > 0 {
		s.podIP = res.IPs[0].String()
	}
	return nil
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func (s *podSync) sandboxFailed(err error) error {
	s.event(v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: "+err.Error())
	return fmt.Errorf("create sandbox: %w", err)
}

// removeSandbox stops and removes a sandbox and tears its network down. A
// host-network pod has no network of its own: no CNI DEL is run for it.
// (An orphan's spec is unknown; Teardown of a sandbox that never had a
// namespace or a CNI attachment does nothing.)
func (s *podSync) removeSandbox(ctx context.Context, id string) error {
	if _, err := s.a.rt.StopContainer(ctx, id, 0); err != nil {
		return err
	}
	if !s.pod.Spec.HostNetwork {
		if err := s.a.net.Teardown(ctx, id); err != nil {
			return fmt.Errorf("tear down network of %s: %w", id, err)
		}
	}
	return s.a.rt.RemoveContainer(ctx, id)
}

func hostPorts(pod *v1.Pod) []cni.PortMapping {
	var out []cni.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, cni.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol), HostIP: p.HostIP})
			}
		}
	}
	return out
}

// podHostname is spec.hostname, or the pod's name cut to a DNS label; a
// host-network pod has the node's hostname.
func podHostname(pod *v1.Pod) string {
	if pod.Spec.HostNetwork {
		if name, err := os.Hostname(); err == nil {
			return name
		}
	}
	name := pod.Spec.Hostname
	if name == "" {
		name = pod.Name
	}
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	return name
}

// hostsFile is the pod's /etc/hosts: localhost, the pod's own name and IPs,
// and its hostAliases. A host-network pod gets the node's own file instead.
func hostsFile(pod *v1.Pod, podIPs []string) []byte {
	if pod.Spec.HostNetwork {
		return nodeHostsFile(nodeHostsPath, pod.Spec.HostAliases)
	}
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	name := podHostname(pod)
	if pod.Spec.Subdomain != "" {
		name = fmt.Sprintf("%s.%s.%s.svc.cluster.local\t%s", name, pod.Spec.Subdomain, pod.Namespace, name)
	}
	for _, ip := range podIPs {
		fmt.Fprintf(&b, "%s\t%s\n", ip, name)
	}
	for _, alias := range pod.Spec.HostAliases {
		fmt.Fprintf(&b, "%s\t%s\n", alias.IP, strings.Join(alias.Hostnames, "\t"))
	}
	return []byte(b.String())
}

// nodeHostsPath is the node's hosts file.
const nodeHostsPath = "/etc/hosts"

// nodeHostsFile is a host-network pod's /etc/hosts, as the kubelet writes
// it: the node's file (at path; empty if unreadable) and the pod's
// hostAliases.
func nodeHostsFile(path string, aliases []v1.HostAlias) []byte {
	node, _ := os.ReadFile(path)
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file (host network).\n")
	b.Write(node)
	if len(aliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
	}
	for _, alias := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", alias.IP, strings.Join(alias.Hostnames, "\t"))
	}
	return []byte(b.String())
}
