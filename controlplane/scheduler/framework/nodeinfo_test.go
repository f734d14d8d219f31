package framework

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const gpu corev1.ResourceName = "example.com/gpu"

// res parses "name=quantity" pairs, e.g. res("cpu=500m", "memory=1Gi").
func res(pairs ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for _, p := range pairs {
		name, q, _ := strings.Cut(p, "=")
		rl[corev1.ResourceName(name)] = resource.MustParse(q)
	}
	return rl
}

func container(requests corev1.ResourceList, ports ...corev1.ContainerPort) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}, Ports: ports}
}

func sidecar(requests corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := container(requests)
	c.RestartPolicy = &always
	return c
}

// newPod returns a pod with the given UID and containers.
func newPod(uid string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func withInit(pod *corev1.Pod, inits ...corev1.Container) *corev1.Pod {
	pod.Spec.InitContainers = inits
	return pod
}

func hostPort(port int32) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: port, HostPort: port}
}

const (
	gi = int64(1 << 30)
	mi = int64(1 << 20)
)

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Resources
	}{
		{
			name: "no requests",
			pod:  newPod("p", container(nil)),
			want: Resources{},
		},
		{
			name: "containers are summed",
			pod:  newPod("p", container(res("cpu=500m", "memory=1Gi")), container(res("cpu=250m", "memory=512Mi"))),
			want: Resources{MilliCPU: 750, Memory: gi + 512*mi},
		},
		{
			name: "a larger init container wins, per resource",
			pod:  withInit(newPod("p", container(res("cpu=500m", "memory=1Gi"))), container(res("cpu=2", "memory=512Mi"))),
			want: Resources{MilliCPU: 2000, Memory: gi},
		},
		{
			name: "init containers run one at a time: the largest counts, not their sum",
			pod:  withInit(newPod("p", container(res("cpu=500m"))), container(res("cpu=1")), container(res("cpu=1"))),
			want: Resources{MilliCPU: 1000},
		},
		{
			name: "a sidecar adds to the containers",
			pod:  withInit(newPod("p", container(res("cpu=500m"))), sidecar(res("cpu=200m"))),
			want: Resources{MilliCPU: 700},
		},
		{
			name: "an init container after a sidecar runs beside it",
			pod:  withInit(newPod("p", container(res("cpu=500m"))), sidecar(res("cpu=200m")), container(res("cpu=1"))),
			want: Resources{MilliCPU: 1200},
		},
		{
			name: "an init container before a sidecar does not",
			pod:  withInit(newPod("p", container(res("cpu=500m"))), container(res("cpu=1")), sidecar(res("cpu=200m"))),
			want: Resources{MilliCPU: 1000},
		},
		{
			name: "overhead is added",
			pod: func() *corev1.Pod {
				p := newPod("p", container(res("cpu=500m", "memory=1Gi")))
				p.Spec.Overhead = res("cpu=100m", "memory=64Mi")
				return p
			}(),
			want: Resources{MilliCPU: 600, Memory: gi + 64*mi},
		},
		{
			name: "ephemeral storage and extended resources",
			pod:  newPod("p", container(res("ephemeral-storage=1Gi", "example.com/gpu=2"))),
			want: Resources{EphemeralStorage: gi, Scalar: map[corev1.ResourceName]int64{gpu: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodRequests(tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PodRequests = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNonZeroRequests(t *testing.T) {
	tests := []struct {
		name     string
		requests corev1.ResourceList
		want     Resources
	}{
		{name: "nothing requested gets both defaults", want: Resources{MilliCPU: 100, Memory: 200 * mi}},
		{name: "cpu only gets the memory default", requests: res("cpu=500m"), want: Resources{MilliCPU: 500, Memory: 200 * mi}},
		{name: "memory only gets the cpu default", requests: res("memory=1Gi"), want: Resources{MilliCPU: 100, Memory: gi}},
		{name: "both requested are kept", requests: res("cpu=2", "memory=1Gi"), want: Resources{MilliCPU: 2000, Memory: gi}},
		{
			name:     "ephemeral storage has no default",
			requests: res("ephemeral-storage=1Gi"),
			want:     Resources{MilliCPU: 100, Memory: 200 * mi, EphemeralStorage: gi},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NonZeroRequests(newPod("p", container(tt.requests))); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NonZeroRequests = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHostPorts(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []HostPort
	}{
		{
			name: "empty IP and protocol default to 0.0.0.0 and TCP",
			pod:  newPod("p", container(nil, hostPort(80))),
			want: []HostPort{{IP: "0.0.0.0", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
		{
			name: "explicit IP and protocol are kept",
			pod: newPod("p", container(nil,
				corev1.ContainerPort{ContainerPort: 53, HostPort: 53, HostIP: "10.0.0.1", Protocol: corev1.ProtocolUDP})),
			want: []HostPort{{IP: "10.0.0.1", Protocol: corev1.ProtocolUDP, Port: 53}},
		},
		{
			name: "container ports without a host port are not host ports",
			pod:  newPod("p", container(nil, corev1.ContainerPort{ContainerPort: 8080})),
		},
		{
			name: "init container ports count",
			pod:  withInit(newPod("p", container(nil, hostPort(80))), container(nil, hostPort(9000))),
			want: []HostPort{
				{IP: "0.0.0.0", Protocol: corev1.ProtocolTCP, Port: 9000},
				{IP: "0.0.0.0", Protocol: corev1.ProtocolTCP, Port: 80},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HostPorts(tt.pod); !slices.Equal(got, tt.want) {
				t.Errorf("HostPorts = %v, want %v", got, tt.want)
			}
		})
	}
}

// nodeState is what a test checks of a NodeInfo.
type nodeState struct {
	Pods                      []string // UIDs, sorted
	CPU, Memory, GPU          int64    // Requested
	NonZeroCPU, NonZeroMemory int64
	Ports                     map[HostPort]int // nil when none
}

func stateOf(ni *NodeInfo) nodeState {
	s := nodeState{
		CPU: ni.Requested.MilliCPU, Memory: ni.Requested.Memory, GPU: ni.Requested.Scalar[gpu],
		NonZeroCPU: ni.NonZeroRequested.MilliCPU, NonZeroMemory: ni.NonZeroRequested.Memory,
	}
	for uid := range ni.Pods {
		s.Pods = append(s.Pods, uid)
	}
	slices.Sort(s.Pods)
	for p, n := range ni.UsedPorts {
		if s.Ports == nil {
			s.Ports = map[HostPort]int{}
		}
		s.Ports[p] = n
	}
	return s
}

func newNodeInfo() *NodeInfo {
	return NewNodeInfo(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Status:     corev1.NodeStatus{Allocatable: res("cpu=4", "memory=8Gi", "pods=110", "example.com/gpu=2")},
	})
}

var tcp80 = HostPort{IP: "0.0.0.0", Protocol: corev1.ProtocolTCP, Port: 80}

func TestNodeInfoAddRemovePod(t *testing.T) {
	web := func() *corev1.Pod { return newPod("web", container(res("cpu=500m", "memory=1Gi"), hostPort(80))) }
	batch := func() *corev1.Pod { return newPod("batch", container(res("cpu=1", "example.com/gpu=1"))) }
	idle := func() *corev1.Pod { return newPod("idle", container(nil)) }
	type step struct {
		remove bool
		pod    *corev1.Pod
	}
	add := func(p *corev1.Pod) step { return step{pod: p} }
	remove := func(p *corev1.Pod) step { return step{remove: true, pod: p} }

	tests := []struct {
		name  string
		steps []step
		want  nodeState
	}{
		{
			name:  "a new node is empty",
			steps: nil,
			want:  nodeState{},
		},
		{
			name:  "adds sum requests, non-zero requests and ports",
			steps: []step{add(web()), add(batch()), add(idle())},
			want: nodeState{
				Pods: []string{"batch", "idle", "web"}, CPU: 1500, Memory: gi, GPU: 1,
				// batch and idle get the memory default.
				NonZeroCPU: 1600, NonZeroMemory: gi + 400*mi, Ports: map[HostPort]int{tcp80: 1},
			},
		},
		{
			name:  "adding the same UID twice counts it once",
			steps: []step{add(web()), add(web())},
			want:  nodeState{Pods: []string{"web"}, CPU: 500, Memory: gi, NonZeroCPU: 500, NonZeroMemory: gi, Ports: map[HostPort]int{tcp80: 1}},
		},
		{
			name: "re-adding a changed pod replaces its requests and ports",
			steps: []step{add(web()), add(newPod("web", container(res("cpu=700m", "memory=1Gi"),
				corev1.ContainerPort{ContainerPort: 8080, HostPort: 8080})))},
			want: nodeState{Pods: []string{"web"}, CPU: 700, Memory: gi, NonZeroCPU: 700, NonZeroMemory: gi,
				Ports: map[HostPort]int{{IP: "0.0.0.0", Protocol: corev1.ProtocolTCP, Port: 8080}: 1}},
		},
		{
			name:  "remove undoes add",
			steps: []step{add(web()), add(batch()), remove(web())},
			want:  nodeState{Pods: []string{"batch"}, CPU: 1000, GPU: 1, NonZeroCPU: 1000, NonZeroMemory: 200 * mi},
		},
		{
			name:  "remove subtracts what was counted, whatever the passed pod says",
			steps: []step{add(web()), remove(newPod("web"))},
			want:  nodeState{},
		},
		{
			name:  "removing an unknown pod changes nothing",
			steps: []step{add(web()), remove(batch())},
			want:  nodeState{Pods: []string{"web"}, CPU: 500, Memory: gi, NonZeroCPU: 500, NonZeroMemory: gi, Ports: map[HostPort]int{tcp80: 1}},
		},
		{
			name:  "a port two pods use stays used until both are gone",
			steps: []step{add(web()), add(newPod("twin", container(nil, hostPort(80)))), remove(web())},
			want:  nodeState{Pods: []string{"twin"}, NonZeroCPU: 100, NonZeroMemory: 200 * mi, Ports: map[HostPort]int{tcp80: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := newNodeInfo()
			for _, s := range tt.steps {
				if s.remove {
					ni.RemovePod(s.pod)
				} else {
					ni.AddPod(s.pod)
				}
			}
			if got := stateOf(ni); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("state = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestNodeInfoSetNode(t *testing.T) {
	ni := newNodeInfo()
	if ni.Allocatable.MilliCPU != 4000 || ni.Allocatable.Memory != 8*gi || ni.Allocatable.Scalar[gpu] != 2 || ni.AllowedPods != 110 {
		t.Errorf("allocatable = %+v, allowed pods %d; want 4 cpu, 8Gi, 2 gpu, 110 pods", ni.Allocatable, ni.AllowedPods)
	}
	ni.AddPod(newPod("web", container(res("cpu=1"))))
	ni.SetNode(&corev1.Node{Status: corev1.NodeStatus{Allocatable: res("cpu=8", "pods=10")}})
	if ni.Allocatable.MilliCPU != 8000 || ni.AllowedPods != 10 || ni.Requested.MilliCPU != 1000 || len(ni.Pods) != 1 {
		t.Errorf("after SetNode: allocatable cpu %d, allowed pods %d, requested cpu %d, %d pods; want 8000, 10, 1000, 1",
			ni.Allocatable.MilliCPU, ni.AllowedPods, ni.Requested.MilliCPU, len(ni.Pods))
	}
}

func TestNodeInfoCloneIsIndependent(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *NodeInfo)
	}{
		{name: "add a pod", change: func(c *NodeInfo) { c.AddPod(newPod("idle", container(nil))) }},
		{name: "remove a pod", change: func(c *NodeInfo) { c.RemovePod(newPod("web")) }},
		{name: "add an extended resource", change: func(c *NodeInfo) { c.AddPod(newPod("more", container(res("example.com/gpu=1")))) }},
		{name: "use another port", change: func(c *NodeInfo) { c.AddPod(newPod("tls", container(nil, hostPort(443)))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := newNodeInfo()
			ni.AddPod(newPod("web", container(res("cpu=500m", "memory=1Gi"), hostPort(80))))
			ni.AddPod(newPod("batch", container(res("cpu=1", "example.com/gpu=1"))))
			before := stateOf(ni)

			c := ni.Clone()
			if got := stateOf(c); !reflect.DeepEqual(got, before) {
				t.Fatalf("clone = %+v, want %+v", got, before)
			}
			tt.change(c)
			if reflect.DeepEqual(stateOf(c), before) {
				t.Fatal("the change did not change the clone")
			}
			if got := stateOf(ni); !reflect.DeepEqual(got, before) {
				t.Errorf("changing the clone changed the original: %+v, want %+v", got, before)
			}
		})
	}
}
