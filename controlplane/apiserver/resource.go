package apiserver

import (
	"context"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
)

// resource describes one REST resource served by the generic handler.
type resource struct {
	gvk        schema.GroupVersionKind
	plural     string
	singular   string
	namespaced bool
	shortNames []string
	categories []string
	newObj     func() runtime.Object
	newList    func() runtime.Object
	strategy   strategy
	// subresources served besides the main resource, e.g. "status", "scale".
	subresources []string
	// readOnly resources are computed when read (the metrics API), not
	// stored: get and list only.
	readOnly bool
	// review resources are only created, answered by review from the
	// request, not stored.
	review func(ctx context.Context, obj runtime.Object) (runtime.Object, error)
}

func (r *resource) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.gvk.Group, Resource: r.plural}
}

func (r *resource) groupKind() schema.GroupKind { return r.gvk.GroupKind() }

func (r *resource) listGVK() schema.GroupVersionKind {
	return r.gvk.GroupVersion().WithKind(r.gvk.Kind + "List")
}

// prefix is the etcd prefix of the resource's objects in namespace ns (all
// namespaces when ns is empty); it ends in a slash.
func (r *resource) prefix(ns string) string {
	if !r.namespaced || ns == "" {
		return "/registry/" + r.plural + "/"
	}
	return "/registry/" + r.plural + "/" + ns + "/"
}

func (r *resource) key(ns, name string) string {
	if !r.namespaced {
		return path.Join("/registry", r.plural, name)
	}
	return path.Join("/registry", r.plural, ns, name)
}

func (r *resource) hasSubresource(name string) bool {
	for _, s := range r.subresources {
		if s == name {
			return true
		}
	}
	return false
}

// strategy is what one resource adds to the generic handler: defaults,
// validation, what an update may change, table columns and the fields a
// field selector may name. baseStrategy gives neutral answers to embed.
type strategy interface {
	// prepareForCreate sets defaults and server-owned fields of a new object.
	prepareForCreate(obj runtime.Object)
	// validate checks a new object after prepareForCreate.
	validate(obj runtime.Object) field.ErrorList
	// prepareForUpdate sets defaults on an updated object and restores
	// what the update may not change from old.
	prepareForUpdate(obj, old runtime.Object)
	// validateUpdate checks an updated object against the stored one.
	validateUpdate(obj, old runtime.Object) field.ErrorList
	// columns are the table columns; row gives one object's cells.
	columns() []metav1.TableColumnDefinition
	row(obj runtime.Object) []any
	// fields are the object's selectable fields besides metadata.name
	// and metadata.namespace.
	fields(obj runtime.Object) fields.Set
}

// allocator is a strategy whose objects hold things outside themselves
// (service IPs and ports). allocate claims what obj needs beyond what old
// (nil on create) holds, before the write, and returns an undo for a failed
// write; release gives back what old holds and obj (nil on delete) does
// not, after the write.
type allocator interface {
	allocate(ctx context.Context, obj, old runtime.Object) (undo func(), err error)
	release(ctx context.Context, obj, old runtime.Object)
}

// graceful is a strategy whose objects are deleted in two steps: the
// deletionTimestamp first, the object when its owner (a node's agent)
// finishes. gracePeriod returns how long to wait; 0 deletes at once.
type graceful interface {
	gracePeriod(obj runtime.Object, requested *int64) int64
}

// finalizing is a strategy whose objects wait, once deleted, for finalizers
// of their own (a namespace for its content to go): held reports that they
// still wait, markTerminating records that deletion began.
type finalizing interface {
	held(obj runtime.Object) bool
	markTerminating(obj runtime.Object)
}

// generational is a strategy whose objects have no spec to count changes
// of in metadata.generation: specChanged says whether an update changes
// what their generation counts.
type generational interface {
	specChanged(obj, old runtime.Object) bool
}

// requesterRecorder is a strategy whose new objects record who made them
// (a CertificateSigningRequest's spec.username and groups).
type requesterRecorder interface {
	recordRequester(obj runtime.Object, u user.Info)
}

// subresourceUpdater is a strategy with status-like subresources of its
// own rules: prepareSubresourceUpdate restores, after the generic split,
// what sub may not change.
type subresourceUpdater interface {
	prepareSubresourceUpdate(sub string, obj, old runtime.Object)
}

// createValidator is a strategy with rules for new objects only (validate
// checks every write).
type createValidator interface {
	validateCreate(obj runtime.Object) field.ErrorList
}

// subresourceValidator is a strategy whose updates through a subresource
// are checked by rules of their own (validateUpdate checks the others).
type subresourceValidator interface {
	validateSubresourceUpdate(sub string, obj, old runtime.Object) field.ErrorList
}

// statusMetadataKeeper is a strategy whose status updates keep the stored
// labels, annotations, finalizers and owner references: kube-apiserver
// resets them for these kinds; a status update of any other kind changes
// them too.
type statusMetadataKeeper interface {
	keepsMetadataOnStatus()
}

// deleteChecker is a strategy that refuses to delete some objects.
type deleteChecker interface {
	checkDelete(obj runtime.Object) error
}

type baseStrategy struct{}

func (baseStrategy) prepareForCreate(runtime.Object)                    {}
func (baseStrategy) validate(runtime.Object) field.ErrorList            { return nil }
func (baseStrategy) prepareForUpdate(_, _ runtime.Object)               {}
func (baseStrategy) validateUpdate(_, _ runtime.Object) field.ErrorList { return nil }
func (baseStrategy) fields(runtime.Object) fields.Set                   { return nil }
func (baseStrategy) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, ageColumn}
}
func (baseStrategy) row(obj runtime.Object) []any {
	m := objectMeta(obj)
	return []any{m.Name, age(m.CreationTimestamp)}
}
