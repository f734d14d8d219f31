package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// A ReplicationController is a ReplicaSet with an equality-only selector
// and a template pointer. The controller sees each as the ReplicaSet it
// amounts to (asReplicaSet) and writes its status back as the
// ReplicationController's (asReplicationController), so that both kinds
// share every line of the sync, as in kube-controller-manager.

// replicationControllerKind is core/v1 ReplicationControllers, read from
// the shared informer.
func replicationControllerKind(client kubernetes.Interface, factory informers.SharedInformerFactory) kind {
	inf := factory.Core().V1().ReplicationControllers()
	return kind{
		gvk:         corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		name:        "replicationcontroller",
		eventSource: "replication-controller",
		informer:    inf.Informer(),
		objects:     replicationControllerObjects{lister: inf.Lister(), client: client},
	}
}

// replicationControllerObjects are ReplicationControllers seen as
// ReplicaSets.
type replicationControllerObjects struct {
	lister corelisters.ReplicationControllerLister
	client kubernetes.Interface
}

var _ replicaSets = replicationControllerObjects{}

func (o replicationControllerObjects) Get(namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := o.lister.ReplicationControllers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	return asReplicaSet(rc), nil
}

func (o replicationControllerObjects) List(namespace string) ([]*appsv1.ReplicaSet, error) {
	rcs, err := o.lister.ReplicationControllers(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1.ReplicaSet, len(rcs))
	for i, rc := range rcs {
		out[i] = asReplicaSet(rc)
	}
	return out, nil
}

func (o replicationControllerObjects) GetLive(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := o.client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return asReplicaSet(rc), nil
}

func (o replicationControllerObjects) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rc, err := o.client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, asReplicationController(rs), metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return asReplicaSet(rc), nil
}

// asReplicaSet is rc as a ReplicaSet. Its type says ReplicationController,
// so that the events recorded on it name rc. It shares rc's maps: like any
// object from a cache, it is read only.
func asReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"},
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: rc.Spec.Selector},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return rs
}

// asReplicationController is the ReplicationController rs stands for.
func asReplicationController(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        &rs.Spec.Template,
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return rc
}
