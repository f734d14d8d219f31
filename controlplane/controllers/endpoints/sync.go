package endpoints

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// sync brings the Endpoints of the service at key up to date: deleted with
// a deleted service, left alone for a service without a selector or of type
// ExternalName, else computed from the pods in the cache and written when
// they differ from what is there.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller made; nothing to retry
	}
	svc, err := c.services.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.delete(ctx, namespace, name)
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || len(svc.Spec.Selector) == 0 {
		return nil
	}
	pods, err := c.pods.Pods(namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	current, err := c.endpoints.Endpoints(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		current = nil
	} else if err != nil {
		return err
	}
	want, write := plan(svc, current, subsetsFor(svc, pods), triggerTime(svc, pods))
	if !write {
		return nil
	}
	return c.write(ctx, svc, want, current == nil)
}

func (c *Controller) delete(ctx context.Context, namespace, name string) error {
	err := c.client.Endpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete endpoints: %w", err)
	}
	if err == nil {
		slog.Info("endpoints of deleted service deleted", "controller", controllerName, "namespace", namespace, "name", name)
	}
	return nil
}

// write creates or updates ep. A create refused because the namespace is
// being deleted is dropped: it would only fail again. A conflict is
// returned for a retry; other failures are also reported as events.
func (c *Controller) write(ctx context.Context, svc *corev1.Service, ep *corev1.Endpoints, create bool) error {
	var err error
	if create {
		_, err = c.client.Endpoints(svc.Namespace).Create(ctx, ep, metav1.CreateOptions{})
	} else {
		_, err = c.client.Endpoints(svc.Namespace).Update(ctx, ep, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		slog.Debug("endpoints written", "controller", controllerName, "namespace", svc.Namespace, "name", svc.Name, "subsets", len(ep.Subsets))
		return nil
	case create && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		// The cache is behind our own last write; retry once it caught up.
		return fmt.Errorf("write endpoints: %w", err)
	case create:
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s/%s: %v", svc.Namespace, svc.Name, err)
		return fmt.Errorf("create endpoints: %w", err)
	default:
		c.recorder.Eventf(ep, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s/%s: %v", svc.Namespace, svc.Name, err)
		return fmt.Errorf("update endpoints: %w", err)
	}
}
