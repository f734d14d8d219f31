// Package tokencleaner deletes bootstrap tokens once they expire, as
// kube-controller-manager's tokencleaner does: the kube-system Secrets of
// type bootstrap.kubernetes.io/token whose expiration has passed. A token
// not expired yet is looked at again when it expires; one without an
// expiration stays until someone deletes it.
package tokencleaner

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const controllerName = "tokencleaner"

// Controller deletes expired bootstrap tokens. It watches only kube-system's
// bootstrap token Secrets, through an informer of its own.
type Controller struct {
	client  typedcorev1.SecretsGetter
	factory informers.SharedInformerFactory
	secrets corelisters.SecretLister
	queue   workqueue.TypedRateLimitingInterface[string]
	now     func() time.Time
}

var _ component.Component = (*Controller)(nil)

// New builds the token cleaner.
func New(cc component.Context) (component.Component, error) {
	return newController(cc.Client, time.Now)
}

func newController(client kubernetes.Interface, now func() time.Time) (*Controller, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
		}))
	secrets := factory.Core().V1().Secrets()
	c := &Controller{client: client.CoreV1(), factory: factory, secrets: secrets.Lister(), queue: component.NewQueue(controllerName), now: now}
	err := informer.AddHandlers(informer.Handler{Name: "secret", Informer: secrets.Informer(), Funcs: informer.OnChange(component.Enqueuer(c.queue))})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run starts its informer and cleans until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			slog.Error("token cleaner: informer did not sync", "type", typ)
			return
		}
	}
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

// sync deletes the token at key if it has expired, or looks again when it
// will have.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	secret, err := c.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	left, expired := bootstrapsecrets.GetExpiration(secret, c.now())
	switch {
	case expired:
		return c.delete(ctx, secret)
	case left > 0:
		c.queue.AddAfter(key, left)
	}
	return nil
}

// delete deletes secret, the very one read (its UID), as expired.
func (c *Controller) delete(ctx context.Context, secret *corev1.Secret) error {
	err := c.client.Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(secret.UID))})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		slog.Info("expired bootstrap token deleted", "secret", secret.Namespace+"/"+secret.Name)
	}
	return err
}
