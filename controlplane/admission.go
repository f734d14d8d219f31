package controlplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiff-lab/skiff/controlplane/admit"
)

// admissionChain is the API server's admission plugins, in
// kube-apiserver's order, reading through f's caches (started by the
// caller once the server serves) and, for what those lack, the API.
func admissionChain(f informers.SharedInformerFactory, client kubernetes.Interface) admission.Interface {
	l := &lookups{client: client, pods: f.Core().V1().Pods().Lister(), accounts: f.Core().V1().ServiceAccounts().Lister()}
	return admission.NewChainHandler(admit.NewServiceAccount(l), admit.NewNodeRestriction(l))
}

// lookups finds pods and service accounts for the plugins: in the cache,
// else (not there yet, or not synced) through the API.
type lookups struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	accounts corelisters.ServiceAccountLister
}

func (l *lookups) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return cachedOrLive(ctx, func() (*corev1.Pod, error) { return l.pods.Pods(namespace).Get(name) },
		func(ctx context.Context) (*corev1.Pod, error) {
			return l.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		})
}

func (l *lookups) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return cachedOrLive(ctx, func() (*corev1.ServiceAccount, error) { return l.accounts.ServiceAccounts(namespace).Get(name) },
		func(ctx context.Context) (*corev1.ServiceAccount, error) {
			return l.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		})
}

func cachedOrLive[T any](ctx context.Context, cached func() (T, error), live func(context.Context) (T, error)) (T, error) {
	obj, err := cached()
	if apierrors.IsNotFound(err) {
		return live(ctx)
	}
	return obj, err
}
