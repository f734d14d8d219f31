package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
)

// minWatchTimeout is the shortest server-chosen watch duration; the server
// picks between it and twice it, as kube-apiserver does.
const minWatchTimeout = 30 * time.Minute

// maxWatchTimeoutSeconds is the longest timeoutSeconds a time.Duration
// holds; longer ones are cut to it rather than overflow to a watch that
// ends at once.
const maxWatchTimeoutSeconds = math.MaxInt64 / int64(time.Second)

// watchParams are a watch request's query parameters.
type watchParams struct {
	sel       selector
	rev       int64
	initial   bool // list first (synthetic ADDED events)
	endMarker bool // sendInitialEvents: a bookmark ends the initial events
	bookmarks bool
	timeout   time.Duration
}

func parseWatch(r *http.Request, res *registry.Resource) (watchParams, error) {
	q := r.URL.Query()
	p := watchParams{bookmarks: isTrue(q.Get("allowWatchBookmarks"))}
	var err error
	if p.sel, err = parseSelector(r, res); err != nil {
		return p, err
	}
	rv := q.Get("resourceVersion")
	if p.rev, err = parseResourceVersion(rv); err != nil {
		return p, err
	}
	p.timeout = minWatchTimeout + rand.N(minWatchTimeout)
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return p, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", v))
		}
		if n > 0 { // 0 leaves the server's choice, as in kube-apiserver
			p.timeout = time.Duration(min(n, maxWatchTimeoutSeconds)) * time.Second
		}
	}
	switch q.Get("sendInitialEvents") {
	case "true":
		var errs field.ErrorList
		if q.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) {
			errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
		if !p.bookmarks {
			errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "sendInitialEvents requires allowWatchBookmarks=true"))
		}
		if len(errs) > 0 {
			return p, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", errs)
		}
		p.initial, p.endMarker = true, true
	case "false", "":
		p.initial = rv == "" || rv == "0"
	default:
		return p, apierrors.NewBadRequest("sendInitialEvents must be true or false")
	}
	return p, nil
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request, req request) error {
	p, err := parseWatch(r, req.res)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	prefix := req.res.Prefix(req.namespace)
	var initial []runtime.Object
	if p.initial {
		page, err := s.store.List(ctx, prefix, store.ListOptions{Match: p.sel.matches}, req.res.NewObj)
		if err != nil {
			return codec.StoreError(err, req.res.GroupResource(), "")
		}
		initial, p.rev = page.Items, page.Revision
	}
	var opts []store.WatchOption
	if !p.sel.everything() {
		opts = append(opts, store.WithPrevious()) // filterEvent compares before and after
	}
	events := s.store.Watch(ctx, prefix, p.rev, req.res.NewObj, opts...)
	enc, err := newWatchEncoder(w, r, s, req.res)
	if err != nil {
		return err
	}
	for _, obj := range initial {
		enc.send(watch.Added, obj)
	}
	if p.endMarker {
		enc.bookmark(p.rev, true)
	}
	enc.flush()
	utilflowcontrol.WatchInitialized(r.Context()) // priority and fairness frees the watch's seat
	for ev := range events {
		switch ev.Type {
		case watch.Bookmark:
			if p.bookmarks {
				enc.bookmark(ev.Revision, false)
			}
		case watch.Error:
			enc.error(ev.Err, p.rev)
			return nil
		default:
			if typ, obj := filterEvent(p.sel, ev); typ != "" {
				enc.send(typ, obj)
			}
		}
		if len(events) == 0 {
			enc.flush()
		}
	}
	return nil
}

// filterEvent turns a store event into what a watcher with sel sees: an
// object that stops matching is DELETED for it, one that starts matching
// is ADDED.
func filterEvent(sel selector, ev store.Event) (watch.EventType, runtime.Object) {
	if sel.everything() {
		return ev.Type, ev.Object
	}
	now := ev.Type != watch.Deleted && sel.matches(ev.Object)
	before := ev.Prev != nil && sel.matches(ev.Prev)
	switch {
	case now && before:
		return watch.Modified, ev.Object
	case now:
		return watch.Added, ev.Object
	case before && ev.Type == watch.Deleted:
		return watch.Deleted, ev.Object
	case before:
		// The watcher last saw the previous state; it leaves at this revision.
		gone := ev.Prev.DeepCopyObject()
		registry.ObjectMeta(gone).ResourceVersion = registry.ObjectMeta(ev.Object).ResourceVersion
		return watch.Deleted, gone
	}
	return "", nil
}

// watchEncoder writes watch events as metav1.WatchEvents framed by the
// negotiated media type's stream serializer, as kube-apiserver does:
// newline-delimited JSON, or length-prefixed protobuf to clients that ask
// for it. Tables and YAML are sent as JSON.
type watchEncoder struct {
	w       http.ResponseWriter
	r       *http.Request
	flusher http.Flusher
	s       *Server
	res     *registry.Resource
	asTable bool
	asMeta  bool // PartialObjectMetadata only
	headers bool
	err     error
	objects runtime.Encoder   // an event's object
	events  streaming.Encoder // the framed WatchEvents
	buf     bytes.Buffer      // an event's object, encoded
}

func newWatchEncoder(w http.ResponseWriter, r *http.Request, s *Server, res *registry.Resource) (*watchEncoder, error) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return nil, errors.New("streaming is not supported")
	}
	e := &watchEncoder{w: w, r: r, flusher: flusher, s: s, res: res, asTable: codec.AcceptsTable(r), asMeta: codec.AcceptsMetadata(r), headers: true}
	info, _ := codec.NegotiateOutput(r)
	if e.asTable || info.StreamSerializer == nil {
		info = codec.SerializerFor(codec.MediaJSON)
	}
	e.objects = info.Serializer
	e.events = streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
	media := info.MediaType
	if media != codec.MediaJSON {
		media += ";stream=watch"
	}
	w.Header().Set("Content-Type", media)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	return e, nil
}

type watchFrame struct {
	Type   watch.EventType `json:"type"`
	Object runtime.Object  `json:"object"`
}

func (e *watchEncoder) send(typ watch.EventType, obj runtime.Object) {
	var v runtime.Object = obj
	switch {
	case e.asTable:
		table, err := e.s.table(e.r, e.res, []runtime.Object{obj}, e.headers)
		if err != nil {
			e.error(err, 0)
			return
		}
		table.ResourceVersion = registry.ObjectMeta(obj).ResourceVersion
		e.headers = false
		v = table
	case e.asMeta:
		v = codec.PartialMetadata(obj)
	default:
		obj.GetObjectKind().SetGroupVersionKind(e.res.GVK)
	}
	e.write(watchFrame{Type: typ, Object: v})
}

// bookmark tells the client the watch has seen everything up to rev.
func (e *watchEncoder) bookmark(rev int64, initialEventsEnd bool) {
	obj := e.res.NewObj()
	m := registry.ObjectMeta(obj)
	m.ResourceVersion = strconv.FormatInt(rev, 10)
	if initialEventsEnd {
		m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	if e.asTable || e.asMeta {
		e.send(watch.Bookmark, obj)
		return
	}
	obj.GetObjectKind().SetGroupVersionKind(e.res.GVK)
	e.write(watchFrame{Type: watch.Bookmark, Object: obj})
}

func (e *watchEncoder) error(err error, rev int64) {
	var status metav1.Status
	switch {
	case errors.Is(err, store.ErrExpired):
		status = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", rev)).ErrStatus
	default:
		var se apierrors.APIStatus
		if !errors.As(err, &se) {
			se = apierrors.NewInternalError(err)
		}
		status = se.Status()
	}
	status.Kind, status.APIVersion = "Status", "v1"
	e.write(watchFrame{Type: watch.Error, Object: &status})
	e.flush()
}

// write sends f as a metav1.WatchEvent whose object is the object's own
// encoding.
func (e *watchEncoder) write(f watchFrame) {
	if e.err != nil {
		return
	}
	e.buf.Reset()
	if e.err = e.objects.Encode(f.Object, &e.buf); e.err != nil {
		return
	}
	e.err = e.events.Encode(&metav1.WatchEvent{Type: string(f.Type), Object: runtime.RawExtension{Raw: e.buf.Bytes()}})
}

func (e *watchEncoder) flush() { e.flusher.Flush() }
