// Package storageversionmigration carries out StorageVersionMigrations as
// kube-controller-manager's storage-version-migrator controller does: it
// writes every object of the named resource again with a no-op patch
// that holds the object's resourceVersion, so that the API server stores
// each in its current encoding (the server rewrites an unchanged object
// only when its stored form is stale: encrypted with a key no longer
// first, say). Conditions tell how it went: Running, then Succeeded with
// the resourceVersion of the list it migrated, or Failed with the reason.
package storageversionmigration

import (
	"context"
	"fmt"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	migrationclient "k8s.io/client-go/kubernetes/typed/storagemigration/v1"
	migrationlisters "k8s.io/client-go/listers/storagemigration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const controllerName = "storage-version-migrator"

// Controller migrates; its queue holds migration names.
type Controller struct {
	client     migrationclient.StorageVersionMigrationsGetter
	dynamic    dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	migrations migrationlisters.StorageVersionMigrationLister
	queue      workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on the shared informers.
func New(cc component.Context) (component.Component, error) {
	migrations := cc.Informers.Storagemigration().V1().StorageVersionMigrations()
	c := &Controller{client: cc.Client.StoragemigrationV1(), dynamic: cc.Dynamic,
		mapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cc.Client.Discovery())),
		migrations: migrations.Lister(), queue: component.NewQueue(controllerName)}
	err := informer.AddHandlers(informer.Handler{Name: "storageversionmigration", Informer: migrations.Informer(),
		Funcs: informer.OnChange(func(obj any) {
			if m, ok := obj.(*storagemigrationv1.StorageVersionMigration); ok {
				c.queue.Add(m.Name)
			}
		})})
	return c, err
}

// Run migrates until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

// sync carries out a migration that has not finished.
func (c *Controller) sync(ctx context.Context, name string) error {
	m, err := c.migrations.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if finished(m) {
		return nil
	}
	// The resource may be a custom resource defined a moment ago.
	c.mapper.Reset()
	gvr, err := c.mapper.ResourceFor(schema.GroupVersionResource{Group: m.Spec.Resource.Group, Resource: m.Spec.Resource.Resource})
	if meta.IsNoMatchError(err) {
		return c.setCondition(ctx, m, storagemigrationv1.MigrationFailed, "ResourceNotFound",
			fmt.Sprintf("resource %s is not served", m.Spec.Resource.String()), "")
	} else if err != nil {
		return err
	}
	if m, err = c.running(ctx, m); err != nil {
		return err
	}
	rv, err := c.migrate(ctx, gvr)
	if err != nil {
		return err // retried with back-off, still Running
	}
	return c.setCondition(ctx, m, storagemigrationv1.MigrationSucceeded, "Migrated",
		fmt.Sprintf("every object of %s was written again", m.Spec.Resource.String()), rv)
}

// migrate writes every object of gvr again, page by page, and returns the
// resourceVersion of the list. An object changed or deleted since it was
// listed needs nothing more: its change wrote it.
func (c *Controller) migrate(ctx context.Context, gvr schema.GroupVersionResource) (string, error) {
	client := c.dynamic.Resource(gvr)
	var listRV string
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		list, err := client.List(ctx, opts)
		if err == nil && listRV == "" {
			listRV = list.GetResourceVersion()
		}
		return list, err
	})
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q}}`, u.GetResourceVersion())
		_, err := client.Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return listRV, err
}

func finished(m *storagemigrationv1.StorageVersionMigration) bool {
	return meta.IsStatusConditionTrue(m.Status.Conditions, string(storagemigrationv1.MigrationSucceeded)) ||
		meta.IsStatusConditionTrue(m.Status.Conditions, string(storagemigrationv1.MigrationFailed))
}

// running marks m Running (once).
func (c *Controller) running(ctx context.Context, m *storagemigrationv1.StorageVersionMigration) (*storagemigrationv1.StorageVersionMigration, error) {
	if meta.IsStatusConditionTrue(m.Status.Conditions, string(storagemigrationv1.MigrationRunning)) {
		return m, nil
	}
	update := m.DeepCopy()
	meta.SetStatusCondition(&update.Status.Conditions, metav1.Condition{Type: string(storagemigrationv1.MigrationRunning),
		Status: metav1.ConditionTrue, Reason: "Migrating", Message: "writing every object of " + m.Spec.Resource.String()})
	return c.client.StorageVersionMigrations().UpdateStatus(ctx, update, metav1.UpdateOptions{})
}

// setCondition ends m with a true condition of typ, Running false.
func (c *Controller) setCondition(ctx context.Context, m *storagemigrationv1.StorageVersionMigration, typ storagemigrationv1.MigrationConditionType, reason, msg, rv string) error {
	update := m.DeepCopy()
	if meta.FindStatusCondition(update.Status.Conditions, string(storagemigrationv1.MigrationRunning)) != nil {
		meta.SetStatusCondition(&update.Status.Conditions, metav1.Condition{Type: string(storagemigrationv1.MigrationRunning),
			Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	}
	meta.SetStatusCondition(&update.Status.Conditions, metav1.Condition{Type: string(typ), Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	update.Status.ResourceVersion = rv
	_, err := c.client.StorageVersionMigrations().UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
