package controlplane_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// recorder counts informer notifications per object name.
type recorder struct {
	mu                    sync.Mutex
	adds, updates, delete map[string]int
}

func newRecorder() *recorder {
	return &recorder{adds: map[string]int{}, updates: map[string]int{}, delete: map[string]int{}}
}

func (r *recorder) handler() cache.ResourceEventHandlerFuncs {
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		return obj.(*corev1.ConfigMap).Name
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.mu.Lock(); r.adds[name(obj)]++; r.mu.Unlock() },
		UpdateFunc: func(old, obj any) {
			if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
				return // a resync, not a change
			}
			r.mu.Lock()
			r.updates[name(obj)]++
			r.mu.Unlock()
		},
		DeleteFunc: func(obj any) { r.mu.Lock(); r.delete[name(obj)]++; r.mu.Unlock() },
	}
}

func (r *recorder) count(m map[string]int, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m[name]
}

func TestInformerKeepsCorrectCacheAcrossRestart(t *testing.T) {
	s, c := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := c.CoreV1().ConfigMaps("default")
	mk := func(name, v string) {
		t.Helper()
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": v}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("before", "1")

	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace("default"))
	informer := factory.Core().V1().ConfigMaps().Informer()
	rec := newRecorder()
	if _, err := informer.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	mk("a", "1")
	mk("b", "1")
	waitFor(t, "adds", func() bool { return rec.count(rec.adds, "b") == 1 })
	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"v": "2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "update and delete", func() bool { return rec.count(rec.updates, "a") == 1 && rec.count(rec.delete, "b") == 1 })

	s.Restart()

	mk("after", "1")
	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"v": "3"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "events after restart", func() bool { return rec.count(rec.adds, "after") == 1 && rec.count(rec.updates, "a") == 2 })

	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "cache to match the server", func() bool {
		if len(informer.GetStore().List()) != len(list.Items) {
			return false
		}
		for _, cm := range list.Items {
			obj, ok, _ := informer.GetStore().GetByKey("default/" + cm.Name)
			if !ok || obj.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
				return false
			}
		}
		return true
	})
	for _, name := range []string{"before", "a", "b", "after"} {
		if n := rec.count(rec.adds, name); n != 1 {
			t.Errorf("%s added %d times, want once", name, n)
		}
	}
	if n := rec.count(rec.delete, "b"); n != 1 {
		t.Errorf("b deleted %d times, want once", n)
	}
	if n := rec.count(rec.updates, "a"); n != 2 {
		t.Errorf("a updated %d times, want twice", n)
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
	return watch.Event{}
}

// TestWatchResourceVersionSemantics runs for a JSON client and for a
// protobuf one (which gets a protobuf watch stream, as from
// kube-apiserver).
func TestWatchResourceVersionSemantics(t *testing.T) {
	t.Run("json", func(t *testing.T) {
		s, c := startServer(t, servertest.OpenEtcd(t))
		watchResourceVersionSemantics(t, s, c)
	})
	t.Run("protobuf", func(t *testing.T) {
		s, _ := startServer(t, servertest.OpenEtcd(t))
		cfg := s.RESTConfig()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		if media := watchMediaType(t, cfg); media != "application/vnd.kubernetes.protobuf;stream=watch" {
			t.Errorf("watch answered %q to a client that prefers protobuf", media)
		}
		watchResourceVersionSemantics(t, s, kubernetes.NewForConfigOrDie(cfg))
	})
}

// watchMediaType starts a watch with cfg's Accept header and returns the
// answer's Content-Type.
func watchMediaType(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+"/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", nil)
	req.Header.Set("Accept", cfg.AcceptContentTypes)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.Header.Get("Content-Type")
}

func watchResourceVersionSemantics(t *testing.T, s *servertest.Server, c kubernetes.Interface) {
	ctx := context.Background()
	cms := c.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// From "0": the current state as synthetic ADDED events, then changes.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "one" {
		t.Fatalf("first event %v", ev)
	}
	w.Stop()

	// From N: only what changed after N; DELETED carries the delete's revision.
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	second, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "two" {
		t.Fatalf("want ADDED two, got %v", ev)
	}
	if err := cms.Delete(ctx, "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	rv, _ := strconv.Atoi(ev.Object.(*corev1.ConfigMap).ResourceVersion)
	created, _ := strconv.Atoi(second.ResourceVersion)
	if ev.Type != watch.Deleted || rv <= created {
		t.Fatalf("want DELETED two with a newer revision than %d, got %s rv %d", created, ev.Type, rv)
	}

	// A compacted revision answers 410 Expired.
	etcd := s.EtcdClient()
	if _, err := etcd.Compact(ctx, int64(rv)); err != nil {
		t.Fatal(err)
	}
	old, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	ev = nextEvent(t, old)
	if status, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || status.Code != 410 {
		t.Fatalf("want ERROR 410, got %v %v", ev.Type, ev.Object)
	}
}

func TestWatchSendInitialEvents(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	cms := c.CoreV1().ConfigMaps("default")
	for _, n := range []string{"x", "y"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []string{"x", "y"} {
		if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != want {
			t.Fatalf("want ADDED %s, got %v", want, ev)
		}
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Bookmark || ev.Object.(*corev1.ConfigMap).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("want the initial-events-end bookmark, got %v %v", ev.Type, ev.Object)
	}
	// Without bookmarks the request is refused, never silently ignored.
	_, err = cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without bookmarks: got %v, want Invalid", err)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	cms := c.CoreV1().ConfigMaps("default")
	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"team": "b"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Labels["team"] = "a"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added {
		t.Fatalf("starting to match: want ADDED, got %s", ev.Type)
	}
	cm.Labels["team"] = "c"
	if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted {
		t.Fatalf("ceasing to match: want DELETED, got %s", ev.Type)
	}
}

// TestWatchBookmarks: a watch that allows bookmarks learns how far the
// store has moved even when nothing it watches changes. (etcd reports
// progress only once the revision passes the watch's start, so the test
// writes something unrelated first.)
func TestWatchBookmarks(t *testing.T) {
	_, c := startServer(t)
	ctx := context.Background()
	cms := c.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	other, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	got, _ := strconv.Atoi(ev.Object.(*corev1.ConfigMap).ResourceVersion)
	want, _ := strconv.Atoi(other.ResourceVersion)
	if ev.Type != watch.Bookmark || got < want {
		t.Fatalf("want a BOOKMARK at or after %d, got %s at %d", want, ev.Type, got)
	}
}
