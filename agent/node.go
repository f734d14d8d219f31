package agent

import (
	"context"
	"fmt"
	"runtime"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/skiff-lab/skiff/version"
)

// maxPods is the node's pod capacity, the kubelet's default.
const maxPods = 110

// nodeReadings is what the node's status is computed from.
type nodeReadings struct {
	machine        machine
	runtimeVersion string
	nodeIP         string
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
		v1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(m.DiskBytes, resource.BinarySI),
	}
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
		Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: r.nodeIP}, {Type: v1.NodeHostName, Address: m.Hostname}},
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

// newNode is the Node the agent registers.
func (a *Agent) newNode() *v1.Node {
	labels := map[string]string{
		v1.LabelHostname: a.cfg.NodeName, v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range a.cfg.NodeLabels {
		labels[k] = v
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Labels: labels},
		Spec:       v1.NodeSpec{Taints: a.cfg.Taints},
	}
}

// register creates the Node, or adopts an existing one (keeping its spec,
// adding our labels).
func (a *Agent) register(ctx context.Context) (*v1.Node, error) {
	nodes := a.client.CoreV1().Nodes()
	node, err := nodes.Create(ctx, a.newNode(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err == nil {
			node, err = a.mergeLabels(ctx, node)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", a.cfg.NodeName, err)
	}
	return node, nil
}

func (a *Agent) mergeLabels(ctx context.Context, node *v1.Node) (*v1.Node, error) {
	want := a.newNode().Labels
	changed := false
	for k, v := range want {
		if node.Labels[k] != v {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[k], changed = v, true
		}
	}
	if !changed {
		return node, nil
	}
	return a.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
}

func (a *Agent) waitForPodCIDR(ctx context.Context) (*v1.Node, error) {
	sel := fields.OneTermEqualSelector("metadata.name", a.cfg.NodeName).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (k8sruntime.Object, error) {
			o.FieldSelector = sel
			return a.client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return a.client.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	ev, err := watchtools.UntilWithSync(ctx, lw, &v1.Node{}, nil, func(e watch.Event) (bool, error) {
		n, ok := e.Object.(*v1.Node)
		return ok && n.Spec.PodCIDR != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the pod CIDR of node %s: %w", a.cfg.NodeName, err)
	}
	return ev.Object.(*v1.Node), nil
}

// diskPressure: less than 10% of the data dir's filesystem is available.
func diskPressure(m machine) bool { return m.DiskBytes > 0 && m.DiskAvailable*10 < m.DiskBytes }
