package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/google/uuid"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
)

// maxGenerateNameTries bounds retries when a generated name is taken.
const maxGenerateNameTries = 8

func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read body: %v", err))
	}
	if len(data) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	return data, nil
}

// decodeBody decodes the request body into into, a new object of kind gvk.
func decodeBody(w http.ResponseWriter, r *http.Request, gvk schema.GroupVersionKind, into runtime.Object) error {
	fv, err := codec.ParseFieldValidation(r)
	if err != nil {
		return err
	}
	dec, err := codec.DecoderFor(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if err := codec.DecodeInto(w, dec, data, gvk, into, fv); err != nil {
		return err
	}
	auditRequestObject(r, into, gvk)
	return nil
}

func isDryRun(r *http.Request) (bool, error) {
	switch v := r.URL.Query()["dryRun"]; {
	case len(v) == 0:
		return false, nil
	case len(v) == 1 && v[0] == metav1.DryRunAll:
		return true, nil
	default:
		return false, apierrors.NewBadRequest(fmt.Sprintf("dryRun must be %q, got %q", metav1.DryRunAll, v))
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, req request) error {
	switch req.subresource {
	case "binding":
		return s.bind(w, r, req)
	case "eviction":
		return s.evict(w, r, req)
	case "token":
		return s.createToken(w, r, req)
	case "":
	default:
		return apierrors.NewMethodNotSupported(req.res.GroupResource(), "create")
	}
	obj := req.res.NewObj()
	if err := decodeBody(w, r, req.res.GVK, obj); err != nil {
		return err
	}
	manager, err := managerName(r)
	if err != nil {
		return err
	}
	return s.createObject(w, r, req, obj, func(obj runtime.Object) runtime.Object { return s.trackFields(req, nil, obj, manager) })
}

// createObject admits and writes a new object; track records its
// managedFields once admission has had its say.
func (s *Server) createObject(w http.ResponseWriter, r *http.Request, req request, obj runtime.Object, track func(runtime.Object) runtime.Object) error {
	dryRun, err := isDryRun(r)
	if err != nil {
		return err
	}
	ctx, tr := s.startCreateTrace(r, req)
	obj, err = s.admitAndPersist(ctx, req, obj, track, dryRun)
	tr.end(obj, err)
	if err != nil {
		return err
	}
	writeObject(w, r, http.StatusCreated, obj, req.res.GVK)
	return nil
}

// admitAndPersist admits a new object, then writes it, returning it as
// written; for a traced pod, each phase is timed and the trace's context
// goes into the pod.
func (s *Server) admitAndPersist(ctx context.Context, req request, obj runtime.Object, track func(runtime.Object) runtime.Object, dryRun bool) (runtime.Object, error) {
	if err := timed(ctx, phaseAdmission, func() error {
		if err := s.admitCreate(ctx, req, obj); err != nil {
			return err
		}
		if err := s.admitMutate(ctx, admission.Create, req, obj, nil, dryRun); err != nil {
			return err
		}
		req.res.Strategy.PrepareForCreate(obj) // defaults what the mutations left out
		return s.checkEscalation(ctx, req, obj)
	}); err != nil {
		return obj, err
	}
	traceOf(ctx).inject(obj)
	obj = track(obj)
	validate := func() error { return s.admitValidate(ctx, admission.Create, req, obj, nil, dryRun) }
	return obj, s.persistNew(ctx, req.res, obj, dryRun, validate)
}

// admitCreate fills in and checks a new object's metadata: namespace,
// server-owned fields, defaults and validation.
func (s *Server) admitCreate(ctx context.Context, req request, obj runtime.Object) error {
	m := registry.ObjectMeta(obj)
	if err := s.checkNamespace(ctx, req, m); err != nil {
		return err
	}
	if m.ResourceVersion != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if m.Name == "" && m.GenerateName == "" {
		return registry.Invalid(req.res.GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	m.UID = "" // set when written
	m.CreationTimestamp = registry.Now()
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = nil, nil
	m.Generation = 1
	m.SelfLink = ""
	m.ManagedFields = nil
	req.res.Strategy.PrepareForCreate(obj)
	if rr, ok := req.res.Strategy.(registry.RequesterRecorder); ok {
		if u, ok := UserFrom(ctx); ok {
			rr.RecordRequester(obj, u)
		}
	}
	if cv, ok := req.res.Strategy.(registry.CreateValidator); ok {
		if errs := cv.ValidateCreate(obj); len(errs) > 0 {
			return registry.Invalid(req.res.GroupKind(), m.Name, errs)
		}
	}
	return nil
}

// persistNew names, validates and writes a new object, retrying generated
// names that are taken, and allocating what the strategy holds outside it;
// admitted (nil for none) is the validating admission of the named object.
func (s *Server) persistNew(ctx context.Context, res *registry.Resource, obj runtime.Object, dryRun bool, admitted func() error) error {
	m := registry.ObjectMeta(obj)
	generate := m.Name == ""
	// A strategy that derives fields from the name and UID starts again
	// from the object as it came when a generated name is taken.
	id, identifies := res.Strategy.(registry.Identifier)
	var pristine runtime.Object
	if identifies && generate {
		pristine = obj.DeepCopyObject()
	}
	for try := 0; ; try++ {
		if try > 0 && pristine != nil {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(pristine.DeepCopyObject()).Elem())
		}
		if generate {
			m.Name = generatedName(m.GenerateName)
		}
		m.UID = newUID()
		if identifies {
			id.Identify(obj)
		}
		if err := timed(ctx, phaseValidation, func() error {
			if errs := s.validateNew(res, obj); len(errs) > 0 {
				return registry.Invalid(res.GroupKind(), m.Name, errs)
			}
			if admitted != nil {
				return admitted()
			}
			return nil
		}); err != nil {
			return err
		}
		if dryRun {
			return nil
		}
		err := timed(ctx, phaseWrite, func() error { return s.writeNew(ctx, res, obj) })
		if errors.Is(err, store.ErrExists) && generate && try < maxGenerateNameTries {
			continue
		}
		return codec.StoreError(err, res.GroupResource(), m.Name)
	}
}

func (s *Server) writeNew(ctx context.Context, res *registry.Resource, obj runtime.Object) error {
	m := registry.ObjectMeta(obj)
	undo := func() {}
	if a, ok := res.Strategy.(registry.Allocator); ok {
		var err error
		if undo, err = a.Allocate(ctx, obj, nil); err != nil {
			return err
		}
	}
	err := s.store.Create(ctx, res.Key(m.Namespace, m.Name), obj)
	if err != nil {
		undo()
		return err
	}
	s.written(res, obj, false)
	return nil
}

// generatedName appends five random characters to base, cut so that the
// name stays within 63 characters (as Kubernetes does).
func generatedName(base string) string {
	const maxBase = 63 - 5
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	return base + utilrand.String(5)
}

func newUID() types.UID { return types.UID(uuid.NewString()) }

func (s *Server) validateNew(res *registry.Resource, obj runtime.Object) field.ErrorList {
	errs := registry.ValidateObjectMeta(registry.ObjectMeta(obj), res.Namespaced, registry.NameValidator(res))
	return append(errs, res.Strategy.Validate(obj)...)
}

// checkNamespace makes the object's namespace agree with the URL's and
// checks that the namespace exists and is not terminating.
func (s *Server) checkNamespace(ctx context.Context, req request, m *metav1.ObjectMeta) error {
	if !req.res.Namespaced {
		m.Namespace = ""
		return nil
	}
	if req.namespace == "" {
		return apierrors.NewBadRequest("a namespace is required to create namespaced objects")
	}
	if m.Namespace == "" {
		m.Namespace = req.namespace
	}
	if m.Namespace != req.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	known, terminating := s.nsCache.lookup(m.Namespace)
	if !known {
		ns := s.namespaces.NewObj()
		if err := s.store.Get(ctx, s.namespaces.Key("", m.Namespace), ns); err != nil {
			return codec.StoreError(err, s.namespaces.GroupResource(), m.Namespace)
		}
		terminating = registry.ObjectMeta(ns).DeletionTimestamp != nil
	}
	if terminating {
		return namespaceTerminating(req.res.GroupResource(), m.Name, m.Namespace)
	}
	return nil
}

// namespaceTerminating is the Forbidden error for a create into a namespace
// being deleted; like kube-apiserver's it carries the NamespaceTerminating
// cause, which controllers check to stop retrying.
func namespaceTerminating(gr schema.GroupResource, name, namespace string) error {
	msg := fmt.Sprintf("unable to create new content in namespace %s because it is being terminated", namespace)
	err := apierrors.NewForbidden(gr, name, errors.New(msg))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: msg, Field: "metadata.namespace",
	})
	return err
}

// checkIdentity refuses a body whose name or namespace differs from the URL.
func checkIdentity(req request, obj runtime.Object) error {
	m := registry.ObjectMeta(obj)
	if m.Name != req.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.Name, req.name))
	}
	if req.res.Namespaced && m.Namespace != "" && m.Namespace != req.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, req request) error {
	if req.subresource == "scale" {
		return s.updateScale(w, r, req, nil)
	}
	obj := req.res.NewObj()
	if err := decodeBody(w, r, req.res.GVK, obj); err != nil {
		return err
	}
	if err := checkIdentity(req, obj); err != nil {
		return err
	}
	return s.applyUpdate(w, r, req, func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
}

// errDryRun stops a store update before it writes.
var errDryRun = errors.New("dry run")

// applyUpdate runs one update: mutate turns the stored object into the
// requested one, then the generic rules apply (optimistic concurrency,
// server-owned metadata, the status split, strategy defaults and
// validation) and the result is written.
func (s *Server) applyUpdate(w http.ResponseWriter, r *http.Request, req request, mutate func(cur runtime.Object) (runtime.Object, error)) error {
	dryRun, err := isDryRun(r)
	if err != nil {
		return err
	}
	manager, err := managerName(r)
	if err != nil {
		return err
	}
	applied := isApply(r) // an apply records its own managedFields
	ctx := r.Context()
	var result, prev runtime.Object
	undo := func() {}
	into := req.res.NewObj()
	err = s.store.Update(ctx, req.res.Key(req.namespace, req.name), into, func(cur runtime.Object) (runtime.Object, error) {
		undo()
		undo = func() {}
		obj, err := mutate(cur.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		// Admission first, as kube-apiserver mutates the update before its
		// Strategy validates it (DefaultTolerationSeconds gives back the
		// tolerations an update would drop).
		if err := s.admitMutate(ctx, admission.Update, req, obj, cur, dryRun); err != nil {
			return nil, err
		}
		if err := s.admitUpdate(req, obj, cur); err != nil {
			return nil, err
		}
		if err := s.admitValidate(ctx, admission.Update, req, obj, cur, dryRun); err != nil {
			return nil, err
		}
		if err := s.checkEscalation(ctx, req, obj); err != nil {
			return nil, err
		}
		if !applied {
			obj = s.trackFields(req, cur, obj, manager)
		}
		result, prev = obj, cur
		if dryRun {
			return nil, errDryRun
		}
		if a, ok := req.res.Strategy.(registry.Allocator); ok {
			if undo, err = a.Allocate(ctx, obj, cur); err != nil {
				undo = func() {}
				return nil, err
			}
		}
		return obj, nil
	})
	switch {
	case errors.Is(err, errDryRun):
	case err != nil:
		undo()
		return codec.StoreError(err, req.res.GroupResource(), req.name)
	default:
		s.written(req.res, result, false)
		if a, ok := req.res.Strategy.(registry.Allocator); ok {
			a.Release(ctx, result, prev)
		}
		if err := s.finishIfReleased(ctx, req.res, result); err != nil {
			return err
		}
	}
	if req.subresource == "scale" {
		return writeScale(w, r, req.res, result)
	}
	return s.respond(w, r, req.res, http.StatusOK, result)
}

// admitUpdate applies the generic update rules to obj, the requested new
// state of cur.
func (s *Server) admitUpdate(req request, obj, cur runtime.Object) error {
	m, cm := registry.ObjectMeta(obj), registry.ObjectMeta(cur)
	if m.ResourceVersion != "" && m.ResourceVersion != cm.ResourceVersion {
		return codec.Conflict(req.res.GroupResource(), req.name)
	}
	if m.UID != "" && m.UID != cm.UID {
		return apierrors.NewConflict(req.res.GroupResource(), req.name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", m.UID, cm.UID))
	}
	keepServerMeta(m, cm)
	switch req.subresource {
	case "status", "approval":
		requested := registry.ObjectMeta(obj).DeepCopy()
		keepAllBut(obj, cur, "Status")
		if su, ok := req.res.Strategy.(registry.SubresourceUpdater); ok {
			su.PrepareSubresourceUpdate(req.subresource, obj, cur)
		}
		if _, ok := req.res.Strategy.(registry.StatusMetadataKeeper); !ok {
			m.Labels, m.Annotations = requested.Labels, requested.Annotations
			m.Finalizers, m.OwnerReferences = requested.Finalizers, requested.OwnerReferences
		}
	case "finalize":
		keepAllBut(obj, cur, "Spec")
	case "ephemeralcontainers", "resize":
		keepAllBut(obj, cur, "Spec")
		if su, ok := req.res.Strategy.(registry.SubresourceUpdater); ok {
			su.PrepareSubresourceUpdate(req.subresource, obj, cur)
		}
	default:
		if req.res.HasSubresource("status") {
			copyField(obj, cur, "Status")
		}
		req.res.Strategy.PrepareForUpdate(obj, cur)
	}
	if registry.SpecChanged(req.res.Strategy, obj, cur) {
		m.Generation = cm.Generation + 1
	}
	errs := registry.ValidateObjectMetaUpdate(m, cm)
	errs = append(errs, s.validateNew(req.res, obj)...)
	if sv, ok := req.res.Strategy.(registry.SubresourceValidator); ok && req.subresource != "" {
		errs = append(errs, sv.ValidateSubresourceUpdate(req.subresource, obj, cur)...)
	} else {
		errs = append(errs, req.res.Strategy.ValidateUpdate(obj, cur)...)
	}
	if len(errs) > 0 {
		return registry.Invalid(req.res.GroupKind(), req.name, errs)
	}
	return nil
}

// keepServerMeta restores metadata only the server may set.
func keepServerMeta(m, cur *metav1.ObjectMeta) {
	m.Name, m.Namespace, m.UID = cur.Name, cur.Namespace, cur.UID
	m.CreationTimestamp = cur.CreationTimestamp
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = cur.DeletionTimestamp, cur.DeletionGracePeriodSeconds
	m.Generation = cur.Generation
	m.SelfLink = ""
	m.ResourceVersion = cur.ResourceVersion
	if m.ManagedFields == nil {
		m.ManagedFields = cur.ManagedFields
	}
}

// keepAllBut makes obj the stored object cur with only obj's field name
// (and the resourceVersion it was based on) taken over.
func keepAllBut(obj, cur runtime.Object, name string) {
	v := reflect.ValueOf(obj).Elem()
	keep := reflect.ValueOf(obj.DeepCopyObject()).Elem().FieldByName(name)
	rv := registry.ObjectMeta(obj).ResourceVersion
	v.Set(reflect.ValueOf(cur.DeepCopyObject()).Elem())
	if keep.IsValid() {
		v.FieldByName(name).Set(keep)
	}
	registry.ObjectMeta(obj).ResourceVersion = rv
}

// copyField sets obj's field name to cur's, when the type has that field.
func copyField(obj, cur runtime.Object, name string) {
	dst := reflect.ValueOf(obj).Elem().FieldByName(name)
	if dst.IsValid() {
		dst.Set(reflect.ValueOf(cur.DeepCopyObject()).Elem().FieldByName(name))
	}
}

// finishIfReleased deletes an object marked for deletion once its last
// finalizer is gone and no grace period is running.
func (s *Server) finishIfReleased(ctx context.Context, res *registry.Resource, obj runtime.Object) error {
	m := registry.ObjectMeta(obj)
	if m.DeletionTimestamp == nil || len(m.Finalizers) > 0 || held(res, obj) || (m.DeletionGracePeriodSeconds != nil && *m.DeletionGracePeriodSeconds > 0) {
		return nil
	}
	return s.deleteNow(ctx, res, m.Namespace, m.Name, func(cur runtime.Object) error {
		if len(registry.ObjectMeta(cur).Finalizers) > 0 || held(res, cur) {
			return errNotReleased
		}
		return nil
	})
}
