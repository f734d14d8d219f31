package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
)

// replicaSetKind is apps/v1 ReplicaSets, read from the shared informer.
func replicaSetKind(client kubernetes.Interface, factory informers.SharedInformerFactory) kind {
	inf := factory.Apps().V1().ReplicaSets()
	return kind{
		gvk:         appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		name:        "replicaset",
		eventSource: "replicaset-controller",
		informer:    inf.Informer(),
		objects:     replicaSetObjects{lister: inf.Lister(), client: client},
	}
}

// replicaSetObjects are ReplicaSets as they are.
type replicaSetObjects struct {
	lister appslisters.ReplicaSetLister
	client kubernetes.Interface
}

var _ replicaSets = replicaSetObjects{}

func (o replicaSetObjects) Get(namespace, name string) (*appsv1.ReplicaSet, error) {
	return o.lister.ReplicaSets(namespace).Get(name)
}

func (o replicaSetObjects) List(namespace string) ([]*appsv1.ReplicaSet, error) {
	return o.lister.ReplicaSets(namespace).List(labels.Everything())
}

func (o replicaSetObjects) GetLive(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return o.client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o replicaSetObjects) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return o.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}
