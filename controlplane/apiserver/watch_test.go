package apiserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func TestFilterEvent(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	web := labeledPod("p", map[string]string{"app": "web"}, "n1")
	db := labeledPod("p", map[string]string{"app": "db"}, "n1")

	tests := []struct {
		name     string
		query    url.Values
		ev       store.Event
		wantType watch.EventType
		wantObj  runtime.Object
	}{
		{"no selector passes ADDED", nil, store.Event{Type: watch.Added, Object: db}, watch.Added, db},
		{"no selector passes DELETED", nil, store.Event{Type: watch.Deleted, Object: db, Prev: db}, watch.Deleted, db},
		{"ADDED matching", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Added, Object: web}, watch.Added, web},
		{"ADDED not matching is dropped", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Added, Object: db}, "", nil},
		{"MODIFIED still matching", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Modified, Object: web, Prev: web}, watch.Modified, web},
		{"MODIFIED into the selector is ADDED", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Modified, Object: web, Prev: db}, watch.Added, web},
		{"MODIFIED out of the selector is DELETED", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Modified, Object: db, Prev: web}, watch.Deleted, nil},
		{"MODIFIED never matching is dropped", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Modified, Object: db, Prev: db}, "", nil},
		{"DELETED matching", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Deleted, Object: web, Prev: web}, watch.Deleted, web},
		{"DELETED not matching is dropped", url.Values{"labelSelector": {"app=web"}}, store.Event{Type: watch.Deleted, Object: db, Prev: db}, "", nil},
		{"field selector", url.Values{"fieldSelector": {"spec.nodeName=n1"}}, store.Event{Type: watch.Added, Object: web}, watch.Added, web},
		{"field selector not matching", url.Values{"fieldSelector": {"spec.nodeName=n2"}}, store.Event{Type: watch.Added, Object: web}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := selectorFor(t, pods, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			typ, obj := filterEvent(sel, tt.ev)
			// A nil wantObj with a type leaves the object unchecked (see
			// TestFilterEventDeletedCarriesPreviousState).
			if typ != tt.wantType || ((tt.wantObj != nil || typ == "") && obj != tt.wantObj) {
				t.Errorf("filterEvent = %q %p, want %q %p", typ, obj, tt.wantType, tt.wantObj)
			}
		})
	}
}

// kube-apiserver's watch cache sends an object that stops matching as
// DELETED with its previous state (the one the watcher last saw, which
// matches its selector) at the new resourceVersion.
func TestFilterEventDeletedCarriesPreviousState(t *testing.T) {
	s := newTestServer(t)
	sel, err := selectorFor(t, resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod")), url.Values{"labelSelector": {"app=web"}})
	if err != nil {
		t.Fatal(err)
	}
	prev := labeledPod("p", map[string]string{"app": "web"}, "n1")
	prev.ResourceVersion = "5"
	cur := labeledPod("p", map[string]string{"app": "db"}, "n1")
	cur.ResourceVersion = "6"
	typ, obj := filterEvent(sel, store.Event{Type: watch.Modified, Object: cur, Prev: prev})
	if typ != watch.Deleted {
		t.Fatalf("type = %q, want DELETED", typ)
	}
	if m := registry.ObjectMeta(obj); m.Labels["app"] != "web" || m.ResourceVersion != "6" {
		t.Errorf("DELETED object has labels %v, resourceVersion %q; want the previous labels at resourceVersion 6", m.Labels, m.ResourceVersion)
	}
}

func TestParseWatch(t *testing.T) {
	s := newTestServer(t)
	pods := resourceFor(t, s, corev1.SchemeGroupVersion.WithKind("Pod"))
	tests := []struct {
		query     string
		wantErr   func(error) bool
		initial   bool
		endMarker bool
		rev       int64
		timeout   time.Duration
	}{
		{query: "", initial: true},
		{query: "resourceVersion=0", initial: true},
		{query: "resourceVersion=12", rev: 12},
		{query: "timeoutSeconds=5", initial: true, timeout: 5 * time.Second},
		// 0 is the server's choice, not a watch that ends at once; the
		// longest a time.Duration holds is taken, not overflowed.
		{query: "timeoutSeconds=0", initial: true},
		{query: "timeoutSeconds=9223372037", initial: true, timeout: time.Duration(maxWatchTimeoutSeconds) * time.Second},
		{query: "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", initial: true, endMarker: true},
		{query: "sendInitialEvents=true", wantErr: apierrors.IsInvalid},
		{query: "sendInitialEvents=maybe", wantErr: apierrors.IsBadRequest},
		{query: "timeoutSeconds=-1", wantErr: apierrors.IsBadRequest},
		{query: "resourceVersion=x", wantErr: apierrors.IsBadRequest},
		{query: "labelSelector=a%20in", wantErr: apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			p, err := parseWatch(httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=1&"+tt.query, nil), pods)
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.initial != tt.initial || p.endMarker != tt.endMarker || p.rev != tt.rev {
				t.Errorf("params = %+v", p)
			}
			if tt.timeout != 0 && p.timeout != tt.timeout {
				t.Errorf("timeout = %v, want %v", p.timeout, tt.timeout)
			}
			if tt.timeout == 0 && (p.timeout < minWatchTimeout || p.timeout >= 2*minWatchTimeout) {
				t.Errorf("server-chosen timeout %v outside [%v, %v)", p.timeout, minWatchTimeout, 2*minWatchTimeout)
			}
		})
	}
}
