package plugins

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func hostPortOn(ip string, protocol corev1.Protocol, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: protocol}
}

func TestNodePortsFilter(t *testing.T) {
	const conflict = "node(s) didn't have free ports for the requested pod ports"
	withPorts := func(ports ...corev1.ContainerPort) func(*corev1.Pod) {
		return withContainers(testContainer(nil, ports...))
	}
	tests := []struct {
		name     string
		existing *corev1.Pod // already on the node
		pod      *corev1.Pod
		want     []string
	}{
		{
			name:     "a pod without host ports fits",
			existing: testPod("old", nil, withPorts(hostPortOn("", "", 80))),
			pod:      testPod("new", nil, withPorts(corev1.ContainerPort{ContainerPort: 80})),
		},
		{
			name:     "same port and protocol conflict",
			existing: testPod("old", nil, withPorts(hostPortOn("", corev1.ProtocolTCP, 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", corev1.ProtocolTCP, 80))),
			want:     []string{conflict},
		},
		{
			name:     "an empty protocol is TCP",
			existing: testPod("old", nil, withPorts(hostPortOn("", "", 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", corev1.ProtocolTCP, 80))),
			want:     []string{conflict},
		},
		{
			name:     "another port is free",
			existing: testPod("old", nil, withPorts(hostPortOn("", "", 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", "", 8080))),
		},
		{
			name:     "another protocol is free",
			existing: testPod("old", nil, withPorts(hostPortOn("", corev1.ProtocolTCP, 53))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", corev1.ProtocolUDP, 53), hostPortOn("", corev1.ProtocolSCTP, 53))),
		},
		{
			name:     "used on 0.0.0.0, wanted on one IP",
			existing: testPod("old", nil, withPorts(hostPortOn("0.0.0.0", "", 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("10.0.0.1", "", 80))),
			want:     []string{conflict},
		},
		{
			name:     "used on one IP, wanted on every IP",
			existing: testPod("old", nil, withPorts(hostPortOn("10.0.0.1", "", 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", "", 80))),
			want:     []string{conflict},
		},
		{
			name:     "same IP conflicts",
			existing: testPod("old", nil, withPorts(hostPortOn("10.0.0.1", "", 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("10.0.0.1", "", 80))),
			want:     []string{conflict},
		},
		{
			name:     "different IPs do not conflict",
			existing: testPod("old", nil, withPorts(hostPortOn("10.0.0.1", "", 80))),
			pod:      testPod("new", nil, withPorts(hostPortOn("10.0.0.2", "", 80))),
		},
		{
			name:     "one conflicting port among several is enough",
			existing: testPod("old", nil, withPorts(hostPortOn("", "", 443))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", "", 80), hostPortOn("", "", 443))),
			want:     []string{conflict},
		},
		{
			name:     "the new pod's init container ports count",
			existing: testPod("old", nil, withPorts(hostPortOn("", "", 9000))),
			pod:      testPod("new", nil, withInitContainers(testContainer(nil, hostPortOn("", "", 9000)))),
			want:     []string{conflict},
		},
		{
			name:     "the existing pod's init container ports count",
			existing: testPod("old", nil, withInitContainers(testContainer(nil, hostPortOn("", "", 9000)))),
			pod:      testPod("new", nil, withPorts(hostPortOn("", "", 9000))),
			want:     []string{conflict},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := testNodeInfo(testNode("n"), tt.existing)
			if got := runFilter(NodePorts{}, tt.pod, ni); !slices.Equal(got, tt.want) {
				t.Errorf("reasons = %q, want %q", got, tt.want)
			}
		})
	}
}
