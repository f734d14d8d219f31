package node

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// t0 is when the tests' node status is first computed.
var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func TestNodeStatus(t *testing.T) {
	r := nodeReadings{
		machine: machine{CPUs: 2, MemoryBytes: 4 << 30, MemAvailable: 2 << 30, DiskBytes: 100 << 30, DiskAvailable: 50 << 30,
			PIDMax: 1000, Processes: 100, Hostname: "h1", Arch: "amd64"},
		runtimeVersion: "containerd://1.6", nodeIP: "10.0.0.5", apiPort: 10250,
		systemReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("8Gi")},
		runtimeHealthy: true, networkReady: true, now: t0,
	}
	s := nodeStatus(v1.NodeStatus{}, r)
	if cpu := s.Allocatable[v1.ResourceCPU]; cpu.MilliValue() != 1500 {
		t.Errorf("allocatable cpu %s, want 1500m (2 less 500m reserved)", cpu.String())
	}
	if mem := s.Allocatable[v1.ResourceMemory]; mem.Sign() != 0 {
		t.Errorf("allocatable memory %s, want 0 (reserved more than there is)", mem.String())
	}
	if pods := s.Capacity[v1.ResourcePods]; pods.Value() != defaultMaxPods {
		t.Errorf("pod capacity %s", pods.String())
	}
	if len(s.Addresses) != 2 || s.Addresses[0].Address != "10.0.0.5" || s.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("addresses %v, endpoint %v", s.Addresses, s.DaemonEndpoints)
	}
	told := r
	told.maxPods, told.externalIP = 30, "192.0.2.7"
	ts := nodeStatus(v1.NodeStatus{}, told)
	if pods := ts.Capacity[v1.ResourcePods]; pods.Value() != 30 {
		t.Errorf("pod capacity with max pods 30: %s", pods.String())
	}
	if want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeExternalIP, Address: "192.0.2.7"},
		{Type: v1.NodeHostName, Address: "h1"}}; !reflect.DeepEqual(ts.Addresses, want) {
		t.Errorf("addresses with an external IP: %v, want %v", ts.Addresses, want)
	}
	if c := condition(s, v1.NodeReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("ready %+v, want True since t0", c)
	}

	// Later, the runtime is down: Ready turns False and moves its
	// transition time; the pressure conditions keep theirs.
	r.runtimeHealthy, r.now = false, t0.Add(time.Minute)
	s = nodeStatus(s, r)
	if c := condition(s, v1.NodeReady); c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || !c.LastTransitionTime.Time.Equal(r.now) {
		t.Errorf("ready %+v, want False since t0+1m", c)
	}
	if c := condition(s, v1.NodeMemoryPressure); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0) || !c.LastHeartbeatTime.Time.Equal(r.now) {
		t.Errorf("memory pressure %+v, want False since t0, heartbeat now", c)
	}
}

func TestDiskPressure(t *testing.T) {
	if diskPressure(machine{DiskBytes: 100, DiskAvailable: 10}) || !diskPressure(machine{DiskBytes: 100, DiskAvailable: 9}) {
		t.Error("disk pressure is under 10% available")
	}
}

func condition(s v1.NodeStatus, typ v1.NodeConditionType) v1.NodeCondition {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return v1.NodeCondition{}
}

// An extended resource an admin advertised by patching the node's
// capacity stays, and is allocatable; what the agent measures is its own.
func TestNodeStatusKeepsExtendedResources(t *testing.T) {
	r := nodeReadings{machine: machine{CPUs: 2, MemoryBytes: 4 << 30, DiskBytes: 100 << 30}, now: t0}
	old := v1.NodeStatus{Capacity: v1.ResourceList{"example.com/dongle": resource.MustParse("3"), v1.ResourceCPU: resource.MustParse("64"),
		"kubernetes.io/batteries": resource.MustParse("1")}}
	s := nodeStatus(old, r)
	for _, list := range []v1.ResourceList{s.Capacity, s.Allocatable} {
		if d := list["example.com/dongle"]; d.Value() != 3 {
			t.Errorf("dongles %s, want 3 in %v", d.String(), list)
		}
		if cpu := list[v1.ResourceCPU]; cpu.Value() != 2 {
			t.Errorf("cpu %s, want the measured 2", cpu.String())
		}
		if _, ok := list["kubernetes.io/batteries"]; ok {
			t.Errorf("a kubernetes.io resource kept: %v", list)
		}
	}
}
