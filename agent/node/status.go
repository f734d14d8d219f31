package node

import (
	"cmp"
	"fmt"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/version"
)

// defaultMaxPods is the node's pod capacity unless told otherwise, the
// kubelet's default.
const defaultMaxPods = 110

// nodeReadings is what the node's status is computed from.
type nodeReadings struct {
	machine        machine
	runtimeVersion string
	nodeIP         string
	externalIP     string // "" when the node has none
	maxPods        int
	apiPort        int32 // of the node API; 0 when not served
	systemReserved v1.ResourceList
	runtimeHealthy bool
	networkReady   bool
	now            time.Time
}

// nodeStatus computes the node's status from readings. It does no I/O;
// lastTransitionTime moves only when a condition changes.
func nodeStatus(old v1.NodeStatus, r nodeReadings) v1.NodeStatus {
	m := r.machine
	capacity := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewQuantity(int64(m.CPUs), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(m.MemoryBytes, resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(int64(cmp.Or(r.maxPods, defaultMaxPods)), resource.DecimalSI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(m.DiskBytes, resource.BinarySI),
	}
	keepExtendedResources(capacity, old.Capacity)
	allocatable := capacity.DeepCopy()
	for name, q := range r.systemReserved {
		if a, ok := allocatable[name]; ok {
			a.Sub(q)
			if a.Sign() < 0 {
				a = *resource.NewQuantity(0, a.Format)
			}
			allocatable[name] = a
		}
	}
	s := v1.NodeStatus{
		Capacity: capacity, Allocatable: allocatable, Phase: old.Phase,
		Addresses:       nodeAddresses(r.nodeIP, r.externalIP, m.Hostname),
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: r.apiPort}},
		NodeInfo: v1.NodeSystemInfo{
			MachineID: m.MachineID, BootID: m.BootID, KernelVersion: m.KernelVersion, OSImage: m.OSImage,
			ContainerRuntimeVersion: r.runtimeVersion, KubeletVersion: version.GitVersion(),
			KubeProxyVersion: version.GitVersion(), OperatingSystem: runtime.GOOS, Architecture: m.Arch,
		},
		Images:     old.Images,
		Conditions: old.Conditions,
	}
	for _, c := range nodeConditions(r) {
		setNodeCondition(&s, c, r.now)
	}
	return s
}

// nodeAddresses are the node's addresses as the kubelet lists them:
// InternalIP, ExternalIP if it has one, Hostname.
func nodeAddresses(internal, external, hostname string) []v1.NodeAddress {
	out := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: internal}}
	if external != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeExternalIP, Address: external})
	}
	return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname})
}

// keepExtendedResources keeps in capacity the extended resources
// (example.com/dongle) advertised on the node by patching its status,
// which the agent does not measure: as the kubelet, it reports them on,
// allocatable as much as capacity.
func keepExtendedResources(capacity, old v1.ResourceList) {
	for name, q := range old {
		n := string(name)
		if _, measured := capacity[name]; measured || !strings.Contains(n, "/") || strings.Contains(n, "kubernetes.io/") {
			continue
		}
		capacity[name] = q.DeepCopy()
	}
}

func nodeConditions(r nodeReadings) []v1.NodeCondition {
	m := r.machine
	cond := func(t v1.NodeConditionType, bad bool, badReason, okReason, badMsg, okMsg string) v1.NodeCondition {
		if bad {
			return v1.NodeCondition{Type: t, Status: v1.ConditionTrue, Reason: badReason, Message: badMsg}
		}
		return v1.NodeCondition{Type: t, Status: v1.ConditionFalse, Reason: okReason, Message: okMsg}
	}
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if !r.runtimeHealthy || !r.networkReady {
		ready = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady",
			Message: fmt.Sprintf("container runtime healthy: %v, network ready: %v", r.runtimeHealthy, r.networkReady)}
	}
	return []v1.NodeCondition{
		cond(v1.NodeMemoryPressure, m.MemAvailable < 100<<20, "KubeletHasInsufficientMemory", "KubeletHasSufficientMemory",
			"kubelet has insufficient memory available", "kubelet has sufficient memory available"),
		cond(v1.NodeDiskPressure, diskPressure(m), "KubeletHasDiskPressure", "KubeletHasNoDiskPressure",
			"kubelet has disk pressure", "kubelet has no disk pressure"),
		cond(v1.NodePIDPressure, m.PIDMax > 0 && m.Processes*10 > m.PIDMax*9, "KubeletHasInsufficientPID", "KubeletHasSufficientPID",
			"kubelet has insufficient PID available", "kubelet has sufficient PID available"),
		ready,
	}
}

func setNodeCondition(s *v1.NodeStatus, c v1.NodeCondition, now time.Time) {
	c.LastHeartbeatTime = metav1.Time{Time: now}
	for i := range s.Conditions {
		old := &s.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.Time{Time: now}
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.Time{Time: now}
	s.Conditions = append(s.Conditions, c)
}

// diskPressure: less than 10% of the data dir's filesystem is available.
func diskPressure(m machine) bool { return m.DiskBytes > 0 && m.DiskAvailable*10 < m.DiskBytes }
