package registry

import (
	"context"
	"path"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Resource describes one REST resource served by the generic handler.
type Resource struct {
	GVK        schema.GroupVersionKind
	Plural     string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string
	NewObj     func() runtime.Object
	NewList    func() runtime.Object
	Strategy   Strategy
	// Subresources served besides the main resource, e.g. "status", "scale".
	Subresources []string
	// ReadOnly resources are computed when read (the metrics API), not
	// stored: get and list only.
	ReadOnly bool
	// Review resources are only created, answered by review from the
	// request, not stored.
	Review func(ctx context.Context, obj runtime.Object) (runtime.Object, error)
}

// GroupResource is the resource's group and plural.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GVK.Group, Resource: r.Plural}
}

// GroupKind is the group and kind of the resource's objects.
func (r *Resource) GroupKind() schema.GroupKind { return r.GVK.GroupKind() }

// ListGVK is the kind of the resource's lists.
func (r *Resource) ListGVK() schema.GroupVersionKind {
	return r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List")
}

// Prefix is the etcd prefix of the resource's objects in namespace ns (all
// namespaces when ns is empty); it ends in a slash.
func (r *Resource) Prefix(ns string) string {
	if !r.Namespaced || ns == "" {
		return "/registry/" + r.Plural + "/"
	}
	return "/registry/" + r.Plural + "/" + ns + "/"
}

// Key is the etcd key of object name in namespace ns.
func (r *Resource) Key(ns, name string) string {
	if !r.Namespaced {
		return path.Join("/registry", r.Plural, name)
	}
	return path.Join("/registry", r.Plural, ns, name)
}

// HasSubresource reports whether the resource serves subresource name.
func (r *Resource) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// Strategy is what one resource adds to the generic handler: defaults,
// validation, what an update may change, table columns and the fields a
// field selector may name. BaseStrategy gives neutral answers to embed.
type Strategy interface {
	// PrepareForCreate sets defaults and server-owned fields of a new object.
	PrepareForCreate(obj runtime.Object)
	// Validate checks a new object after PrepareForCreate.
	Validate(obj runtime.Object) field.ErrorList
	// PrepareForUpdate sets defaults on an updated object and restores
	// what the update may not change from old.
	PrepareForUpdate(obj, old runtime.Object)
	// ValidateUpdate checks an updated object against the stored one.
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// Columns are the table columns; row gives one object's cells.
	Columns() []metav1.TableColumnDefinition
	Row(obj runtime.Object) []any
	// Fields are the object's selectable fields besides metadata.name
	// and metadata.namespace.
	Fields(obj runtime.Object) fields.Set
}

// Allocator is a strategy whose objects hold things outside themselves
// (service IPs and ports). allocate claims what obj needs beyond what old
// (nil on create) holds, before the write, and returns an undo for a failed
// write; release gives back what old holds and obj (nil on delete) does
// not, after the write.
type Allocator interface {
	Allocate(ctx context.Context, obj, old runtime.Object) (undo func(), err error)
	Release(ctx context.Context, obj, old runtime.Object)
}

// Graceful is a strategy whose objects are deleted in two steps: the
// deletionTimestamp first, the object when its owner (a node's agent)
// finishes. GracePeriod returns how long to wait; 0 deletes at once.
type Graceful interface {
	GracePeriod(obj runtime.Object, requested *int64) int64
}

// Finalizing is a strategy whose objects wait, once deleted, for finalizers
// of their own (a namespace for its content to go): held reports that they
// still wait, MarkTerminating records that deletion began.
type Finalizing interface {
	Held(obj runtime.Object) bool
	MarkTerminating(obj runtime.Object)
}

// generational is a strategy whose objects have no spec to count changes
// of in metadata.generation: SpecChanged says whether an update changes
// what their generation counts.
type generational interface {
	specChanged(obj, old runtime.Object) bool
}

// RequesterRecorder is a strategy whose new objects record who made them
// (a CertificateSigningRequest's spec.username and groups).
type RequesterRecorder interface {
	RecordRequester(obj runtime.Object, u user.Info)
}

// SubresourceUpdater is a strategy with status-like subresources of its
// own rules: PrepareSubresourceUpdate restores, after the generic split,
// what sub may not change.
type SubresourceUpdater interface {
	PrepareSubresourceUpdate(sub string, obj, old runtime.Object)
}

// Identifier is a strategy whose new objects derive fields from their
// final name and UID (a Job's selector and its pods' labels): Identify
// runs once both are set, before validation.
type Identifier interface {
	Identify(obj runtime.Object)
}

// Orphaner is a strategy whose objects, deleted without a
// propagationPolicy, orphan their dependents instead of leaving them to
// the garbage collector (batch/v1 Jobs keep their pods, for
// compatibility); the client is warned with OrphanWarning.
type Orphaner interface {
	OrphanWarning() string
}

// CreateValidator is a strategy with rules for new objects only (validate
// checks every write).
type CreateValidator interface {
	ValidateCreate(obj runtime.Object) field.ErrorList
}

// SubresourceValidator is a strategy whose updates through a subresource
// are checked by rules of their own (ValidateUpdate checks the others).
type SubresourceValidator interface {
	ValidateSubresourceUpdate(sub string, obj, old runtime.Object) field.ErrorList
}

// StatusMetadataKeeper is a strategy whose status updates keep the stored
// labels, annotations, finalizers and owner references: kube-apiserver
// resets them for these kinds; a status update of any other kind changes
// them too.
type StatusMetadataKeeper interface {
	keepsMetadataOnStatus()
}

// DeleteChecker is a strategy that refuses to delete some objects.
type DeleteChecker interface {
	CheckDelete(obj runtime.Object) error
}

// BaseStrategy is the neutral Strategy that kinds embed: no defaults, no
// rules beyond the generic ones, the NAME and AGE columns.
type BaseStrategy struct{}

func (BaseStrategy) PrepareForCreate(runtime.Object)                    {}
func (BaseStrategy) Validate(runtime.Object) field.ErrorList            { return nil }
func (BaseStrategy) PrepareForUpdate(_, _ runtime.Object)               {}
func (BaseStrategy) ValidateUpdate(_, _ runtime.Object) field.ErrorList { return nil }
func (BaseStrategy) Fields(runtime.Object) fields.Set                   { return nil }
func (BaseStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, ageColumn}
}
func (BaseStrategy) Row(obj runtime.Object) []any {
	m := ObjectMeta(obj)
	return []any{m.Name, age(m.CreationTimestamp)}
}

// Scaler is a strategy whose objects have a scale subresource.
type Scaler interface {
	// Scale reads the object's replicas and selector.
	Scale(obj runtime.Object) autoscalingv1.Scale
	// SetReplicas sets the object's desired replicas.
	SetReplicas(obj runtime.Object, n int32)
}

// SpecChanged reports whether an update changes what the object's
// generation counts: its spec, unless its strategy says otherwise.
func SpecChanged(st Strategy, obj, old runtime.Object) bool {
	if g, ok := st.(generational); ok {
		return g.specChanged(obj, old)
	}
	return !EqualField(obj, old, "Spec")
}
