package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Builders shared by the cache and algorithm tests.

// testNode returns a node with cpu, 8Gi of memory and room for 110 pods,
// changed by opts.
func testNode(name, cpu string, opts ...func(*corev1.Node)) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc}}
	for _, o := range opts {
		o(n)
	}
	return n
}

// testPod returns a pod (UID = name) requesting cpu ("" for nothing) and
// memory in proportion, 2Gi per cpu, so resource use stays balanced.
func testPod(name, cpu string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	if cpu != "" {
		q := resource.MustParse(cpu)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU:    q,
			corev1.ResourceMemory: *resource.NewQuantity(q.MilliValue()*(2<<30)/1000, resource.BinarySI),
		}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// boundTo returns a copy of pod bound to node.
func boundTo(pod *corev1.Pod, node string) *corev1.Pod {
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	return p
}
