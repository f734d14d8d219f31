package store_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/controlplane/store"
)

func newStore(t *testing.T) (*store.Store, *clientv3.Client) {
	t.Helper()
	client := servertest.StartEtcd(t).Connect(t)
	return store.New(client, scheme.Scheme), client
}

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"k": name}}
}

func newCM() runtime.Object { return &corev1.ConfigMap{} }

func TestCreateGetUpdateDelete(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	obj := cm("a")
	if err := s.Create(ctx, "/registry/configmaps/ns/a", obj); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "/registry/configmaps/ns/a", cm("a")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, "/registry/configmaps/ns/a", got); err != nil || got.ResourceVersion != obj.ResourceVersion || got.Data["k"] != "a" {
		t.Fatalf("get: %v %+v", err, got)
	}
	calls := 0
	err := s.Update(ctx, "/registry/configmaps/ns/a", &corev1.ConfigMap{}, func(cur runtime.Object) (runtime.Object, error) {
		calls++
		if calls == 1 { // a concurrent writer wins the first round
			if err := s.Update(ctx, "/registry/configmaps/ns/a", &corev1.ConfigMap{}, func(c runtime.Object) (runtime.Object, error) {
				c.(*corev1.ConfigMap).Data["other"] = "x"
				return c, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		cur.(*corev1.ConfigMap).Data["k"] = "b"
		return cur, nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("update retried on a lost race: err %v calls %d", err, calls)
	}
	_ = s.Get(ctx, "/registry/configmaps/ns/a", got)
	if got.Data["k"] != "b" || got.Data["other"] != "x" {
		t.Fatalf("both writes kept: %v", got.Data)
	}
	before := got.ResourceVersion
	if err := s.Update(ctx, "/registry/configmaps/ns/a", got, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }); err != nil || got.ResourceVersion != before {
		t.Fatalf("a no-op update writes nothing: %v %s → %s", err, before, got.ResourceVersion)
	}
	deleted := &corev1.ConfigMap{}
	if err := s.Delete(ctx, "/registry/configmaps/ns/a", deleted, nil); err != nil || deleted.Name != "a" {
		t.Fatalf("delete: %v", err)
	}
	if err := s.Get(ctx, "/registry/configmaps/ns/a", got); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestListPagesAtOneRevision(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for i := range 7 {
		if err := s.Create(ctx, fmt.Sprintf("/registry/configmaps/ns/c%d", i), cm(fmt.Sprintf("c%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.List(ctx, "/registry/configmaps/ns/", store.ListOptions{Limit: 3}, newCM)
	if err != nil || len(first.Items) != 3 || first.Continue == "" || first.Remaining != 4 {
		t.Fatalf("first page: %v %+v", err, first)
	}
	// A write between pages does not show in later pages.
	if err := s.Create(ctx, "/registry/configmaps/ns/c9", cm("c9")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for page := first; ; {
		for _, item := range page.Items {
			names = append(names, item.(*corev1.ConfigMap).Name)
		}
		if page.Continue == "" {
			break
		}
		if page, err = s.List(ctx, "/registry/configmaps/ns/", store.ListOptions{Limit: 3, Continue: page.Continue}, newCM); err != nil {
			t.Fatal(err)
		}
	}
	if len(names) != 7 || names[6] != "c6" {
		t.Fatalf("paged names %v", names)
	}
	if _, err := s.List(ctx, "/registry/configmaps/ns/", store.ListOptions{Continue: "garbage"}, newCM); !errors.Is(err, store.ErrBadContinue) {
		t.Fatalf("bad continue: %v", err)
	}
}

// TestExpiredContinueGoesOnInconsistently: a continue token whose revision
// was compacted away is refused with one that goes on from the same key at
// the latest revision, as kube-apiserver answers.
func TestExpiredContinueGoesOnInconsistently(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	for i := range 5 {
		createCM(ctx, t, s, fmt.Sprintf("c%d", i))
	}
	first, err := s.List(ctx, "/registry/configmaps/ns/", store.ListOptions{Limit: 2}, newCM)
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	latest := createCM(ctx, t, s, "c5")
	if _, err := client.Compact(ctx, latest); err != nil {
		t.Fatal(err)
	}
	_, err = s.List(ctx, "/registry/configmaps/ns/", store.ListOptions{Limit: 2, Continue: first.Continue}, newCM)
	expired, ok := errors.AsType[*store.ExpiredContinueError](err)
	if !ok || !errors.Is(err, store.ErrExpired) {
		t.Fatalf("an expired continue: %v", err)
	}
	next, err := s.List(ctx, "/registry/configmaps/ns/", store.ListOptions{Limit: 2, Continue: expired.Continue}, newCM)
	if err != nil || len(next.Items) != 2 || next.Items[0].(*corev1.ConfigMap).Name != "c2" || next.Remaining != 2 {
		t.Fatalf("going on from the expired token: %v %+v", err, next)
	}
}

// createCM creates ConfigMap name in namespace ns and returns its revision.
func createCM(ctx context.Context, t *testing.T, s *store.Store, name string) int64 {
	t.Helper()
	c := cm(name)
	if err := s.Create(ctx, "/registry/configmaps/ns/"+name, c); err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(c.ResourceVersion, 10, 64)
	return rev
}

func TestWatchFromRevisionAndCompaction(t *testing.T) {
	s, client := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rev := createCM(ctx, t, s, "a")
	events := s.Watch(ctx, "/registry/configmaps/", rev, newCM)
	if err := s.Create(ctx, "/registry/configmaps/ns/b", cm("b")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/registry/configmaps/ns/a", &corev1.ConfigMap{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ  watch.EventType
		name string
	}{{watch.Added, "b"}, {watch.Deleted, "a"}} {
		select {
		case ev := <-events:
			if ev.Type != want.typ || ev.Object.(*corev1.ConfigMap).Name != want.name {
				t.Fatalf("got %s %v, want %s %s", ev.Type, ev.Object, want.typ, want.name)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	}
	current, _ := s.Revision(ctx)
	if _, err := client.Compact(ctx, current); err != nil {
		t.Fatal(err)
	}
	old := s.Watch(ctx, "/registry/configmaps/", rev, newCM)
	select {
	case ev := <-old:
		if ev.Type != watch.Error || !errors.Is(ev.Err, store.ErrExpired) {
			t.Fatalf("compacted watch: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no error event")
	}
}

func TestReservations(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if err := s.Reserve(ctx, "/r/1", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, "/r/1", "b"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("double reserve: %v", err)
	}
	if err := s.Release(ctx, "/r/1", "b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Reservations(ctx, "/r/"); got["1"] != "a" {
		t.Fatalf("another owner's release freed it: %v", got)
	}
	if err := s.Release(ctx, "/r/1", "a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Reservations(ctx, "/r/"); len(got) != 0 {
		t.Fatalf("release: %v", got)
	}
}

func TestCompactorKeepsOneIntervalOfHistory(t *testing.T) {
	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := cm("first")
	if err := s.Create(ctx, "/registry/configmaps/ns/first", first); err != nil {
		t.Fatal(err)
	}
	go s.RunCompactor(ctx, 200*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.List(ctx, "/registry/configmaps/", store.ListOptions{Revision: 1}, newCM)
		if errors.Is(err, store.ErrExpired) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history never compacted: %v", err)
		}
		if err := s.Update(ctx, "/registry/configmaps/ns/first", &corev1.ConfigMap{}, func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.ConfigMap).Data["t"] = time.Now().String()
			return cur, nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What was written just now is still readable at its own revision.
	now, _ := s.Revision(ctx)
	if _, err := s.List(ctx, "/registry/configmaps/", store.ListOptions{Revision: now}, newCM); err != nil {
		t.Fatalf("recent history: %v", err)
	}
}

// TestWatchPrevious: the state before a change comes with the event only
// to watches that ask for it; a delete's last state comes to every watch.
func TestWatchPrevious(t *testing.T) {
	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rev := createCM(ctx, t, s, "a")
	plain := s.Watch(ctx, "/registry/configmaps/", rev, newCM)
	withPrev := s.Watch(ctx, "/registry/configmaps/", rev, newCM, store.WithPrevious())
	err := s.Update(ctx, "/registry/configmaps/ns/a", &corev1.ConfigMap{}, func(obj runtime.Object) (runtime.Object, error) {
		obj.(*corev1.ConfigMap).Data = map[string]string{"k": "v"}
		return obj, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/registry/configmaps/ns/a", &corev1.ConfigMap{}, nil); err != nil {
		t.Fatal(err)
	}
	next := func(events <-chan store.Event) store.Event {
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return store.Event{}
	}
	if ev := next(plain); ev.Type != watch.Modified || ev.Prev != nil {
		t.Errorf("plain watch: %s with Prev %v, want MODIFIED without", ev.Type, ev.Prev)
	}
	if ev := next(withPrev); ev.Type != watch.Modified || ev.Prev == nil || ev.Prev.(*corev1.ConfigMap).Data["k"] != "a" {
		t.Errorf("watch WithPrevious: %s with Prev %v, want MODIFIED with the state before", ev.Type, ev.Prev)
	}
	for _, events := range []<-chan store.Event{plain, withPrev} {
		if ev := next(events); ev.Type != watch.Deleted || ev.Object.(*corev1.ConfigMap).Data["k"] != "v" {
			t.Errorf("delete: %s %v, want DELETED with the last state", ev.Type, ev.Object)
		}
	}
}
