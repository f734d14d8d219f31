// Package rootcacert publishes the cluster CA in every active namespace as
// the ConfigMap kube-root-ca.crt (key ca.crt), putting it back when it is
// deleted or changed, as kube-controller-manager's root-ca-cert-publisher
// does: pods' kube-api-access volumes project it to verify the API server.
package rootcacert

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "root-ca-cert-publisher"
	workers        = 1
	// Name is the ConfigMap's name, CAKey its key.
	Name  = "kube-root-ca.crt"
	CAKey = "ca.crt"
)

// descriptionAnnotation is upstream's note on the ConfigMap.
const descriptionAnnotation = "kubernetes.io/description"

const description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."

// Controller keeps kube-root-ca.crt in every active namespace; its queue
// holds namespace names.
type Controller struct {
	caPEM      string
	client     typedcorev1.ConfigMapsGetter
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New returns the constructor of the controller publishing caPEM.
func New(caPEM []byte) component.Constructor {
	return func(cc component.Context) (component.Component, error) {
		core := cc.Informers.Core().V1()
		c := &Controller{caPEM: string(caPEM), client: cc.Client.CoreV1(), namespaces: core.Namespaces().Lister(),
			configMaps: core.ConfigMaps().Lister(), queue: component.NewQueue(controllerName)}
		err := informer.AddHandlers(
			informer.Handler{Name: "namespace", Informer: core.Namespaces().Informer(), Funcs: informer.OnChange(c.enqueue)},
			informer.Handler{Name: "configmap", Informer: core.ConfigMaps().Informer(), Funcs: informer.OnChange(c.enqueue)},
		)
		return c, err
	}
}

// Run publishes until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) enqueue(obj any) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.queue.Add(o.Name)
	case *corev1.ConfigMap:
		if o.Name == Name {
			c.queue.Add(o.Namespace)
		}
	}
}

// sync creates or restores the namespace's kube-root-ca.crt.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	if active, err := controllers.ActiveNamespace(c.namespaces, namespace); !active || err != nil {
		return err
	}
	cm, err := c.configMaps.ConfigMaps(namespace).Get(Name)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: namespace}}
		c.fill(cm)
		_, err = c.client.ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
	case err != nil:
		return err
	case cm.Data[CAKey] != c.caPEM || cm.Annotations[descriptionAnnotation] != description || len(cm.Data) != 1:
		cm = cm.DeepCopy()
		c.fill(cm)
		_, err = c.client.ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("publish %s: %w", Name, err)
	}
	return nil
}

func (c *Controller) fill(cm *corev1.ConfigMap) {
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[descriptionAnnotation] = description
	cm.Data = map[string]string{CAKey: c.caPEM}
	cm.BinaryData = nil
}
