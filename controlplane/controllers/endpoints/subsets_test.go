package endpoints

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testPod is a pod of app web in namespace ns on node n1 with a container
// port http/8080, ready or not.
func testPod(name, ip string, ready bool, edits ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      ip,
			PodIPs:     []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
	if ip == "" {
		p.Status.PodIPs = nil
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func testService(ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      ports,
		},
	}
}

func svcPort(name string, port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP, TargetPort: target}
}

func address(p *corev1.Pod) corev1.EndpointAddress {
	node := p.Spec.NodeName
	return corev1.EndpointAddress{
		IP: p.Status.PodIPs[0].IP, NodeName: &node,
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
	}
}

func addrs(pods ...*corev1.Pod) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, p := range pods {
		out = append(out, address(p))
	}
	return out
}

func tcp(name string, port int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: port, Protocol: corev1.ProtocolTCP}
}

func TestSubsetsFor(t *testing.T) {
	a, b, c := testPod("a", "10.244.1.2", true), testPod("b", "10.244.1.3", false), testPod("c", "10.244.1.4", true)
	noHTTP := testPod("d", "10.244.1.5", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })
	http9090 := testPod("e", "10.244.1.6", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 })
	sidecar := testPod("f", "10.244.1.7", true, func(p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100}}}}
	})
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	succeeded := testPod("s", "10.244.2.1", true, phase(corev1.PodSucceeded))
	failed := testPod("x", "10.244.2.2", false, phase(corev1.PodFailed))
	noIP := testPod("n", "", true)
	deleting := testPod("g", "10.244.2.3", true, func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now })

	num := svcPort("", 80, intstr.FromInt32(8080))
	named := svcPort("web", 80, intstr.FromString("http"))
	metrics := svcPort("metrics", 9100, intstr.FromString("metrics"))
	other := svcPort("admin", 81, intstr.FromInt32(8081))

	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		{
			name: "ready and not ready",
			svc:  testService(num),
			pods: []*corev1.Pod{b, a},
			want: []corev1.EndpointSubset{{Addresses: addrs(a), NotReadyAddresses: addrs(b), Ports: []corev1.EndpointPort{tcp("", 8080)}}},
		},
		{
			name: "named target port resolved per pod",
			svc:  testService(named),
			pods: []*corev1.Pod{http9090, a, c},
			want: []corev1.EndpointSubset{
				{Addresses: addrs(a, c), Ports: []corev1.EndpointPort{tcp("web", 8080)}},
				{Addresses: addrs(http9090), Ports: []corev1.EndpointPort{tcp("web", 9090)}},
			},
		},
		{
			name: "pod without the named port left out of that port only",
			svc:  testService(named, other),
			pods: []*corev1.Pod{noHTTP, a},
			want: []corev1.EndpointSubset{
				{Addresses: addrs(a, noHTTP), Ports: []corev1.EndpointPort{tcp("admin", 8081)}},
				{Addresses: addrs(a), Ports: []corev1.EndpointPort{tcp("web", 8080)}},
			},
		},
		{
			name: "named port of a sidecar",
			svc:  testService(metrics),
			pods: []*corev1.Pod{a, sidecar},
			want: []corev1.EndpointSubset{{Addresses: addrs(sidecar), Ports: []corev1.EndpointPort{tcp("metrics", 9100)}}},
		},
		{
			name: "terminal, IP-less and deleting pods left out",
			svc:  testService(num),
			pods: []*corev1.Pod{succeeded, failed, noIP, deleting, a},
			want: []corev1.EndpointSubset{{Addresses: addrs(a), Ports: []corev1.EndpointPort{tcp("", 8080)}}},
		},
		{
			name: "publishNotReadyAddresses",
			svc: func() *corev1.Service {
				s := testService(num)
				s.Spec.PublishNotReadyAddresses = true
				return s
			}(),
			pods: []*corev1.Pod{a, b, deleting, failed},
			want: []corev1.EndpointSubset{{Addresses: addrs(a, b, deleting), Ports: []corev1.EndpointPort{tcp("", 8080)}}},
		},
		{
			name: "several ports in one subset, sorted",
			svc:  testService(other, num),
			pods: []*corev1.Pod{c, b, a},
			want: []corev1.EndpointSubset{{
				Addresses: addrs(a, c), NotReadyAddresses: addrs(b),
				Ports: []corev1.EndpointPort{tcp("", 8080), tcp("admin", 8081)},
			}},
		},
		{
			name: "headless without ports",
			svc: func() *corev1.Service {
				s := testService()
				s.Spec.ClusterIP = corev1.ClusterIPNone
				return s
			}(),
			pods: []*corev1.Pod{a, b},
			want: []corev1.EndpointSubset{{Addresses: addrs(a), NotReadyAddresses: addrs(b)}},
		},
		{
			name: "not headless without ports",
			svc:  testService(),
			pods: []*corev1.Pod{a},
			want: []corev1.EndpointSubset{},
		},
		{
			name: "no pods",
			svc:  testService(num),
			want: []corev1.EndpointSubset{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := subsetsFor(tt.svc, tt.pods)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			reversed := slices.Clone(tt.pods)
			slices.Reverse(reversed)
			if again := subsetsFor(tt.svc, reversed); !reflect.DeepEqual(again, got) {
				t.Errorf("pod order changes the result:\n%+v\n%+v", again, got)
			}
		})
	}
}

func TestAddressFor(t *testing.T) {
	dual := testPod("a", "10.244.1.2", true, func(p *corev1.Pod) {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::2"})
		p.Spec.Hostname, p.Spec.Subdomain = "a-host", "web"
	})
	v6 := testService()
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	got, ok := addressFor(v6, dual)
	if !ok || got.IP != "fd00::2" || got.Hostname != "a-host" || *got.NodeName != "n1" {
		t.Errorf("IPv6 service: %+v %v", got, ok)
	}
	v4only := testPod("b", "10.244.1.3", true)
	if _, ok := addressFor(v6, v4only); ok {
		t.Error("an IPv4-only pod has an address for an IPv6 service")
	}
	legacy := testPod("c", "", true, func(p *corev1.Pod) { p.Status.PodIP = "10.244.1.4"; p.Spec.NodeName = "" })
	got, ok = addressFor(testService(), legacy)
	if !ok || got.IP != "10.244.1.4" || got.NodeName != nil || got.Hostname != "" {
		t.Errorf("pod with status.podIP only: %+v %v", got, ok)
	}
}

func TestRepackReadyWins(t *testing.T) {
	a := address(testPod("a", "10.244.1.2", true))
	p := tcp("", 80)
	got := repack([]entry{{addr: a, ready: false, port: &p}, {addr: a, ready: true, port: &p}})
	want := []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{a}, Ports: []corev1.EndpointPort{p}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestEndpointsChanged(t *testing.T) {
	base := testPod("a", "10.244.1.2", true)
	tests := []struct {
		name string
		edit func(*corev1.Pod)
		want bool
	}{
		{"annotation only", func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }, false},
		{"ready transition time only", func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.Now() }, false},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }, true},
		{"readiness", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"IP", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.9"}} }, true},
		{"deletion", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, true},
		{"phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tt.edit(cur)
			if got := endpointsChanged(base, cur); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTriggerTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := testService()
	svc.CreationTimestamp = metav1.NewTime(t0)
	created := testPod("a", "10.244.1.2", true, func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
		p.Status.Conditions = nil
	})
	readied := testPod("b", "10.244.1.3", true, func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(2 * time.Minute))
	})
	if got := triggerTime(svc, nil); !got.Equal(t0) {
		t.Errorf("service alone: %v", got)
	}
	if got := triggerTime(svc, []*corev1.Pod{created}); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("created pod: %v", got)
	}
	if got := triggerTime(svc, []*corev1.Pod{readied, created}); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("readiness transition: %v", got)
	}
}
