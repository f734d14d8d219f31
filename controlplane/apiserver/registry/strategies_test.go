package registry

import (
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The small strategies: namespaces, nodes, events, endpoints and leases.

func TestNamespaceLifecycle(t *testing.T) {
	ns := &corev1.Namespace{}
	ns.Name = "team-a"
	namespaceStrategy{}.PrepareForCreate(ns)
	if len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes ||
		ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != "team-a" {
		t.Fatalf("created namespace = %+v", ns)
	}
	if !(namespaceStrategy{}).Held(ns) {
		t.Error("namespace with the kubernetes finalizer not held")
	}
	namespaceStrategy{}.MarkTerminating(ns)
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("phase = %s after markTerminating", ns.Status.Phase)
	}

	update := ns.DeepCopy()
	update.Spec.Finalizers, update.Labels = nil, nil
	namespaceStrategy{}.PrepareForUpdate(update, ns)
	if len(update.Spec.Finalizers) != 1 || update.Labels[corev1.LabelMetadataName] != "team-a" {
		t.Errorf("update changed spec or lost the name label: %+v", update)
	}
}

func TestNamespaceCheckDelete(t *testing.T) {
	tests := []struct {
		name      string
		forbidden bool
	}{{"default", true}, {"kube-system", true}, {"kube-public", true}, {"kube-node-lease", false}, {"team-a", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{}
			ns.Name = tt.name
			if err := (namespaceStrategy{}).CheckDelete(ns); apierrors.IsForbidden(err) != tt.forbidden {
				t.Errorf("checkDelete = %v, want forbidden %v", err, tt.forbidden)
			}
		})
	}
}

func TestSmallStrategiesValidate(t *testing.T) {
	tests := []struct {
		name     string
		strategy Strategy
		obj      runtime.Object
		want     []string
	}{
		{"namespace empty finalizer", namespaceStrategy{}, &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{""}}},
			[]string{"spec.finalizers[0]: Required value"}},
		{"node taints", NodeStrategy{}, &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Effect: "Sometimes"}}}},
			[]string{"spec.taints[1].key: Required value", "spec.taints[1].effect: Unsupported value"}},
		{"event namespace mismatch and type", EventStrategy{}, func() *corev1.Event {
			ev := &corev1.Event{InvolvedObject: corev1.ObjectReference{Namespace: "other"}, Type: "Info"}
			ev.Namespace = "default"
			return ev
		}(), []string{"involvedObject.namespace: Invalid value", "type: Unsupported value"}},
		{"endpoints bad IP and port", EndpointsStrategy{}, &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "nope"}}, Ports: []corev1.EndpointPort{{Port: 0}}}}},
			[]string{"subsets[0].addresses[1].ip: Invalid value", "subsets[0].ports[0].port: Invalid value"}},
		{"lease duration", leaseStrategy{}, &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}},
			[]string{"spec.leaseDurationSeconds: Invalid value"}},
		{"lease transitions", leaseStrategy{}, &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}},
			[]string{"spec.leaseTransitions: Invalid value"}},
		{"valid lease", leaseStrategy{}, &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](40)}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.strategy.PrepareForCreate(tt.obj)
			apitest.CheckErrorFields(t, tt.strategy.Validate(tt.obj), tt.want...)
		})
	}
}

func TestEndpointsDefaultProtocol(t *testing.T) {
	ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}, {Port: 53, Protocol: corev1.ProtocolUDP}}}}}
	EndpointsStrategy{}.PrepareForCreate(ep)
	if p := ep.Subsets[0].Ports; p[0].Protocol != corev1.ProtocolTCP || p[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("ports = %+v", p)
	}
}

func TestNodePodCIDR(t *testing.T) {
	tests := []struct {
		name        string
		old, update string
		want        string
		errs        []string
	}{
		{"first assignment", "", "10.244.1.0/24", "10.244.1.0/24", nil},
		{"omitted keeps the old one", "10.244.1.0/24", "", "10.244.1.0/24", nil},
		{"change refused", "10.244.1.0/24", "10.244.2.0/24", "10.244.2.0/24", []string{"spec.podCIDR: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: tt.old}}
			node := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: tt.update}}
			NodeStrategy{}.PrepareForUpdate(node, old)
			if node.Spec.PodCIDR != tt.want {
				t.Errorf("podCIDR = %q, want %q", node.Spec.PodCIDR, tt.want)
			}
			apitest.CheckErrorFields(t, NodeStrategy{}.ValidateUpdate(node, old), tt.errs...)
		})
	}
}
