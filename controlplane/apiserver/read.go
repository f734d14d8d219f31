package apiserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func (s *Server) get(w http.ResponseWriter, r *http.Request, req request) error {
	obj := req.res.NewObj()
	if err := s.store.Get(r.Context(), req.res.Key(req.namespace, req.name), obj); err != nil {
		return codec.StoreError(err, req.res.GroupResource(), req.name)
	}
	if req.subresource == "scale" {
		return writeScale(w, r, req.res, obj)
	}
	return s.respond(w, r, req.res, http.StatusOK, obj)
}

// respond writes one object, as a Table or as its metadata alone when the
// client asks for that.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) error {
	if codec.AcceptsTable(r) {
		table, err := s.table(r, res, []runtime.Object{obj}, true)
		if err != nil {
			return err
		}
		table.ResourceVersion = registry.ObjectMeta(obj).ResourceVersion
		codec.WriteNegotiated(w, r, code, table)
		return nil
	}
	if codec.AcceptsMetadata(r) {
		writeObject(w, r, code, codec.PartialMetadata(obj), codec.PartialGVK)
		return nil
	}
	writeObject(w, r, code, obj, res.GVK)
	return nil
}

// selector is a parsed label and field selector for one resource.
type selector struct {
	res    *registry.Resource
	labels labels.Selector
	fields fields.Selector
}

func parseSelector(r *http.Request, res *registry.Resource) (selector, error) {
	q := r.URL.Query()
	sel := selector{res: res, labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if v := q.Get("labelSelector"); v != "" {
		if sel.labels, err = labels.Parse(v); err != nil {
			return sel, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	if v := q.Get("fieldSelector"); v != "" {
		if sel.fields, err = fields.ParseSelector(v); err != nil {
			return sel, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		known := objectFields(res, res.NewObj())
		for _, req := range sel.fields.Requirements() {
			if _, ok := known[req.Field]; !ok {
				return sel, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
	}
	return sel, nil
}

func (sel selector) everything() bool { return sel.labels.Empty() && sel.fields.Empty() }

func (sel selector) matches(obj runtime.Object) bool {
	if sel.everything() {
		return true
	}
	m := registry.ObjectMeta(obj)
	return sel.labels.Matches(labels.Set(m.Labels)) && sel.fields.Matches(objectFields(sel.res, obj))
}

func objectFields(res *registry.Resource, obj runtime.Object) fields.Set {
	m := registry.ObjectMeta(obj)
	set := fields.Set{"metadata.name": m.Name}
	if res.Namespaced {
		set["metadata.namespace"] = m.Namespace
	}
	for k, v := range res.Strategy.Fields(obj) {
		set[k] = v
	}
	return set
}

// listOptions reads limit, continue, resourceVersion and
// resourceVersionMatch.
func listOptions(r *http.Request, sel selector) (store.ListOptions, error) {
	q := r.URL.Query()
	opts := store.ListOptions{Continue: q.Get("continue")}
	if !sel.everything() {
		opts.Match = sel.matches
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", v))
		}
		opts.Limit = n
	}
	rv, err := parseResourceVersion(q.Get("resourceVersion"))
	if err != nil {
		return opts, err
	}
	switch q.Get("resourceVersionMatch") {
	case "", string(metav1.ResourceVersionMatchNotOlderThan):
	case string(metav1.ResourceVersionMatchExact):
		if rv == 0 {
			return opts, apierrors.NewBadRequest("resourceVersionMatch=Exact needs a resourceVersion other than 0")
		}
		opts.Revision = rv
	default:
		return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersionMatch %q", q.Get("resourceVersionMatch")))
	}
	if opts.Continue != "" && rv != 0 {
		return opts, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return opts, nil
}

func parseResourceVersion(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	rv, err := strconv.ParseInt(v, 10, 64)
	if err != nil || rv < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", v))
	}
	return rv, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, req request) error {
	sel, err := parseSelector(r, req.res)
	if err != nil {
		return err
	}
	opts, err := listOptions(r, sel)
	if err != nil {
		return err
	}
	page, err := s.store.List(r.Context(), req.res.Prefix(req.namespace), opts, req.res.NewObj)
	if err != nil {
		return codec.StoreError(err, req.res.GroupResource(), "")
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10), Continue: page.Continue}
	if page.Continue != "" && opts.Match == nil {
		listMeta.RemainingItemCount = &page.Remaining
	}
	if codec.AcceptsTable(r) {
		table, err := s.table(r, req.res, page.Items, true)
		if err != nil {
			return err
		}
		table.ListMeta = listMeta
		codec.WriteNegotiated(w, r, http.StatusOK, table)
		return nil
	}
	if codec.AcceptsMetadata(r) {
		writeObject(w, r, http.StatusOK, codec.PartialList(page.Items, listMeta), codec.PartialListGVK)
		return nil
	}
	list := req.res.NewList()
	if err := setList(list, page.Items); err != nil {
		return err
	}
	*list.(metav1.ListMetaAccessor).GetListMeta().(*metav1.ListMeta) = listMeta
	writeObject(w, r, http.StatusOK, list, req.res.ListGVK())
	return nil
}

// writeObject writes an API object, stamping its apiVersion and kind.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, gvk schema.GroupVersionKind) {
	auditResponseObject(r, obj, gvk)
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	codec.WriteNegotiated(w, r, code, obj)
}
