package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// t0 is the clock of the pure tests.
var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

var testLabels = map[string]string{"app": "web"}

// newRS is a ReplicaSet "web" in namespace "ns" selecting app=web.
func newRS(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rs-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: testLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

type podOpt func(*corev1.Pod)

// newPod is a Pending pod "name" in namespace "ns" labelled app=web,
// created at t0, changed by opts.
func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), ResourceVersion: "1",
			Labels:            map[string]string{"app": "web", "tier": "front"},
			CreationTimestamp: metav1.NewTime(t0),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(rs, rsKind))
	}
}

func ownedByOther(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "foreign", UID: "foreign-uid", Controller: new(true)}}
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func labelled(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }

func created(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = new(metav1.NewTime(t0)) }

// readyAt marks the pod Running and Ready since t.
func readyAt(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)}}
	}
}

func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}

func deletionCostOf(v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{deletionCostAnnotation: v} }
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// rsKind is what the pods of a ReplicaSet name as their controller.
var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
