package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

var errNotReleased = errors.New("object still has finalizers")

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if r.ContentLength != 0 && r.Body != nil {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("read body: %v", err))
		}
		if len(data) > 0 {
			if err := decodeDeleteOptions(r.Header.Get("Content-Type"), data, opts); err != nil {
				return nil, err
			}
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("dryRun"); v != "" {
		opts.DryRun = []string{v}
	}
	return opts, validateDeleteOptions(opts)
}

// decodeDeleteOptions accepts DeleteOptions under any API group version, as
// clients send them with the version of the resource they delete.
func decodeDeleteOptions(contentType string, data []byte, opts *metav1.DeleteOptions) error {
	dec, err := codec.DecoderFor(contentType)
	if err != nil {
		return err
	}
	gvk := metav1.Unversioned.WithKind("DeleteOptions")
	obj, _, err := dec.Decode(data, &gvk, opts)
	if err != nil && !runtime.IsStrictDecodingError(err) {
		return apierrors.NewBadRequest(fmt.Sprintf("decode DeleteOptions: %v", err))
	}
	if obj != opts {
		return apierrors.NewBadRequest(fmt.Sprintf("expected DeleteOptions, got %T", obj))
	}
	return nil
}

func validateDeleteOptions(opts *metav1.DeleteOptions) error {
	if opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			return apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy must be Background, Foreground or Orphan, got %q", *opts.PropagationPolicy))
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	for _, d := range opts.DryRun {
		if d != metav1.DryRunAll {
			return apierrors.NewBadRequest(fmt.Sprintf("dryRun must be %q, got %q", metav1.DryRunAll, d))
		}
	}
	return nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, req request) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	obj, deleted, err := s.deleteOne(r.Context(), req.res, req.namespace, req.name, opts)
	if err != nil {
		return err
	}
	// 202 only for an object not gone yet whose dependents the client asked
	// to delete first with the old orphanDependents=false, as kube-apiserver
	// answers (a graceful or finalized deletion under way is a 200).
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents { //nolint:staticcheck // as kube-apiserver
		code = http.StatusAccepted
	}
	if _, isPod := req.res.Strategy.(registry.Graceful); isPod || !deleted {
		return s.respond(w, r, req.res, code, obj)
	}
	m := registry.ObjectMeta(obj)
	codec.WriteJSON(w, code, codec.SuccessStatus(&metav1.StatusDetails{Name: m.Name, Group: req.res.GVK.Group, Kind: req.res.Plural, UID: m.UID}))
	return nil
}

// deleteOne deletes one object as opts ask: at once, or by marking it with
// a deletionTimestamp when a grace period or finalizers hold it. deleted
// reports whether the object is gone.
func (s *Server) deleteOne(ctx context.Context, res *registry.Resource, ns, name string, opts *metav1.DeleteOptions) (obj runtime.Object, deleted bool, err error) {
	opts = defaultPropagation(ctx, res, opts)
	key := res.Key(ns, name)
	cur := res.NewObj()
	if err := s.store.Get(ctx, key, cur); err != nil {
		return nil, false, codec.StoreError(err, res.GroupResource(), name)
	}
	if err := checkPreconditions(res, cur, opts.Preconditions); err != nil {
		return nil, false, err
	}
	if err := s.admit(ctx, admission.Delete, request{res: res, namespace: ns, name: name}, nil, cur, opts, len(opts.DryRun) > 0); err != nil {
		return nil, false, err
	}
	if c, ok := res.Strategy.(registry.DeleteChecker); ok {
		if err := c.CheckDelete(cur); err != nil {
			return nil, false, err
		}
	}
	grace := gracePeriod(res, cur, opts)
	finalizers := finalizersFor(registry.ObjectMeta(cur).Finalizers, opts.PropagationPolicy)
	wait := grace > 0 || len(finalizers) > 0 || held(res, cur)
	if len(opts.DryRun) > 0 {
		return cur, !wait, nil
	}
	if wait {
		obj, err := s.markDeleted(ctx, res, cur, opts, grace, finalizers)
		return obj, false, err
	}
	var out runtime.Object
	err = s.deleteNow(ctx, res, ns, name, func(c runtime.Object) error {
		out = c
		if err := checkPreconditions(res, c, opts.Preconditions); err != nil {
			return err
		}
		if len(registry.ObjectMeta(c).Finalizers) > 0 || held(res, c) {
			return errNotReleased
		}
		return nil
	})
	if errors.Is(err, errNotReleased) {
		return s.deleteOne(ctx, res, ns, name, opts)
	}
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// deleteNow removes the object from the store and releases what its
// Strategy allocated for it.
func (s *Server) deleteNow(ctx context.Context, res *registry.Resource, ns, name string, check func(runtime.Object) error) error {
	obj := res.NewObj()
	if err := s.store.Delete(ctx, res.Key(ns, name), obj, check); err != nil {
		if errors.Is(err, errNotReleased) {
			return err
		}
		return codec.StoreError(err, res.GroupResource(), name)
	}
	s.written(res, obj, true)
	if a, ok := res.Strategy.(registry.Allocator); ok {
		a.Release(ctx, nil, obj)
	}
	return nil
}

// markDeleted sets the deletionTimestamp (now + grace), shortening a grace
// period already running, and adds the finalizers the propagation policy
// asks for.
func (s *Server) markDeleted(ctx context.Context, res *registry.Resource, cur runtime.Object, opts *metav1.DeleteOptions, grace int64, finalizers []string) (runtime.Object, error) {
	m := registry.ObjectMeta(cur)
	into := res.NewObj()
	var tr *createTrace
	if m.DeletionTimestamp == nil {
		tr = s.startDeleteTrace(ctx, res)
	}
	err := s.store.Update(ctx, res.Key(m.Namespace, m.Name), into, func(c runtime.Object) (runtime.Object, error) {
		if err := checkPreconditions(res, c, opts.Preconditions); err != nil {
			return nil, err
		}
		cm := registry.ObjectMeta(c)
		cm.Finalizers = finalizersFor(cm.Finalizers, opts.PropagationPolicy)
		if f, ok := res.Strategy.(registry.Finalizing); ok && f.Held(c) {
			f.MarkTerminating(c)
		}
		if cm.DeletionTimestamp == nil || (cm.DeletionGracePeriodSeconds != nil && grace < *cm.DeletionGracePeriodSeconds) {
			t := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
			cm.DeletionTimestamp, cm.DeletionGracePeriodSeconds = &t, &grace
			if _, ok := res.Strategy.(registry.Graceful); ok && cm.Generation > 0 {
				cm.Generation++ // a graceful deletion is a change its owner acts on
			}
			tr.inject(c)
		}
		return c, nil
	})
	tr.end(into, err)
	if err != nil {
		return nil, codec.StoreError(err, res.GroupResource(), m.Name)
	}
	s.written(res, into, false)
	return into, s.finishIfReleased(ctx, res, into)
}

// Held reports whether the strategy keeps obj until its own finalizers
// are done.
func held(res *registry.Resource, obj runtime.Object) bool {
	f, ok := res.Strategy.(registry.Finalizing)
	return ok && f.Held(obj)
}

func checkPreconditions(res *registry.Resource, obj runtime.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	m := registry.ObjectMeta(obj)
	if pre.UID != nil && *pre.UID != m.UID {
		return apierrors.NewConflict(res.GroupResource(), m.Name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.UID))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.ResourceVersion {
		return apierrors.NewConflict(res.GroupResource(), m.Name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.ResourceVersion))
	}
	return nil
}

// defaultPropagation makes a deletion without a propagation policy orphan
// the dependents of a kind that orphans them by default, and warns.
func defaultPropagation(ctx context.Context, res *registry.Resource, opts *metav1.DeleteOptions) *metav1.DeleteOptions {
	o, ok := res.Strategy.(registry.Orphaner)
	if !ok || opts.PropagationPolicy != nil || opts.OrphanDependents != nil { //nolint:staticcheck // as kube-apiserver
		return opts
	}
	warning.AddWarning(ctx, "", o.OrphanWarning())
	out := opts.DeepCopy()
	out.PropagationPolicy = ptr.To(metav1.DeletePropagationOrphan)
	return out
}

func gracePeriod(res *registry.Resource, obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	g, ok := res.Strategy.(registry.Graceful)
	if !ok {
		return 0
	}
	return g.GracePeriod(obj, opts.GracePeriodSeconds)
}

// finalizersFor sets the garbage collector's finalizers as an explicit
// propagation policy asks: orphan for Orphan, foregroundDeletion for
// Foreground, neither for Background. Without a policy they stay as they are.
func finalizersFor(finalizers []string, policy *metav1.DeletionPropagation) []string {
	if policy == nil {
		return finalizers
	}
	out := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool {
		return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
	})
	switch *policy {
	case metav1.DeletePropagationOrphan:
		out = append(out, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if slices.Equal(out, finalizers) {
		return finalizers
	}
	return out
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, req request) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	sel, err := parseSelector(r, req.res)
	if err != nil {
		return err
	}
	page, err := s.store.List(r.Context(), req.res.Prefix(req.namespace), store.ListOptions{Match: sel.matches}, req.res.NewObj)
	if err != nil {
		return codec.StoreError(err, req.res.GroupResource(), "")
	}
	var items []runtime.Object
	for _, item := range page.Items {
		m := registry.ObjectMeta(item)
		obj, _, err := s.deleteOne(r.Context(), req.res, m.Namespace, m.Name, opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		items = append(items, obj)
	}
	list := req.res.NewList()
	if err := setList(list, items); err != nil {
		return err
	}
	writeObject(w, r, http.StatusOK, list, req.res.ListGVK())
	return nil
}
