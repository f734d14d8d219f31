// Package serviceaccount gives every active namespace its "default"
// ServiceAccount, creating it again when it is deleted, as
// kube-controller-manager's serviceaccount controller does. Namespaces that
// are being deleted are left alone.
package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers"
	"github.com/skiff-lab/skiff/informer"
)

const (
	controllerName = "serviceaccount"
	workers        = 1
)

// managed names the ServiceAccounts every active namespace gets.
var managed = []string{"default"}

// Controller keeps the managed ServiceAccounts in every active namespace.
// Its queue holds namespace names.
type Controller struct {
	client     typedcorev1.ServiceAccountsGetter
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	queue      workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the serviceaccount controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, cc.Informers)
}

func newController(client kubernetes.Interface, inf informers.SharedInformerFactory) (*Controller, error) {
	c := &Controller{
		client:     client.CoreV1(),
		namespaces: inf.Core().V1().Namespaces().Lister(),
		accounts:   inf.Core().V1().ServiceAccounts().Lister(),
		queue:      component.NewQueue(controllerName),
	}
	err := informer.AddHandlers(
		informer.Handler{Name: "namespace", Informer: inf.Core().V1().Namespaces().Informer(), Funcs: informer.OnChange(c.enqueueNamespace)},
		informer.Handler{Name: "serviceaccount", Informer: inf.Core().V1().ServiceAccounts().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			DeleteFunc: c.accountDeleted,
		}},
	)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run keeps the accounts until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, workers, c.sync)
}

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) accountDeleted(obj any) {
	key, ok := component.KeyOf(obj)
	if !ok {
		return
	}
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err == nil {
		c.queue.Add(ns)
	}
}

// sync creates the managed accounts missing from namespace, if it is active.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	if active, err := controllers.ActiveNamespace(c.namespaces, namespace); !active || err != nil {
		return err
	}
	for _, name := range managed {
		if err := c.ensure(ctx, namespace, name); err != nil {
			return err
		}
	}
	return nil
}

// ensure creates account name in namespace unless the cache has it; an
// account that already exists, or a namespace that began terminating
// meanwhile, is not an error.
func (c *Controller) ensure(ctx context.Context, namespace, name string) error {
	if _, err := c.accounts.ServiceAccounts(namespace).Get(name); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	_, err := c.client.ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil:
		slog.Info("service account created", "controller", controllerName, "namespace", namespace, "name", name)
		return nil
	case apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		return fmt.Errorf("create service account %s: %w", name, err)
	}
}
