package controlplane_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/podtrace"
)

// TestUI: the journey page's files are served from the binary under
// /ui/, with the journeys the server keeps and, as Server-Sent Events,
// each new step; only to users RBAC allows (system:skiff:journey-viewer).
// The page in a browser is test/e2e's TestOperateNode/page.
func TestUI(t *testing.T) {
	s := servertest.Start(t)
	admin := s.RESTConfig()

	page := get(t, admin, "/ui/")
	if page.status != http.StatusOK || !strings.Contains(page.body, `<script type="module" src="app.js">`) {
		t.Fatalf("GET /ui/: %d %q", page.status, page.body)
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q, want only the page's own origin", csp)
	}
	for path, kind := range map[string]string{"/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		if r := get(t, admin, path); r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), kind) {
			t.Errorf("GET %s: %d, Content-Type %q", path, r.status, r.header.Get("Content-Type"))
		}
	}

	steps := streamSteps(t, admin)
	pod := createCPUPod(t, s.Client(), "shown", "1")
	for {
		select {
		case e := <-steps:
			if e.UID != string(pod.UID) || e.Step.Name != "apiserver.create" {
				continue
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no apiserver.create step of pod shown in the event stream in 30 s")
		}
		break
	}
	var journeys []podtrace.Journey
	if r := get(t, admin, "/ui/journeys"); r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &journeys) != nil ||
		len(journeys) == 0 || journeys[0].Name != "shown" {
		t.Errorf("GET /ui/journeys: %d %.300s, want the journey of shown first", r.status, r.body)
	}
	if r := get(t, admin, "/ui/journeys?limit=1"); r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &journeys) != nil || len(journeys) != 1 {
		t.Errorf("GET /ui/journeys?limit=1: %d %.300s, want one journey", r.status, r.body)
	}
	if r := get(t, admin, "/ui/journeys?limit=none"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "limit") {
		t.Errorf("GET /ui/journeys?limit=none: %d %s, want 400 naming limit", r.status, r.body)
	}
	checkUIRBAC(t, s)
}

// checkUIRBAC: a user without a role may not read the page; bound to
// system:skiff:journey-viewer, they may.
func checkUIRBAC(t *testing.T, s *servertest.Server) {
	bob := s.UserConfig("bob")
	if r := get(t, bob, "/ui/journeys"); r.status != http.StatusForbidden {
		t.Errorf("GET /ui/journeys without a role: %d, want 403", r.status)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-journeys"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:skiff:journey-viewer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
	if _, err := s.Client().RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	servertest.Eventually(t, "bob may read the journeys", 10*time.Second, func(context.Context) (bool, string) {
		r := get(t, bob, "/ui/journeys")
		return r.status == http.StatusOK, r.body
	})
}

type response struct {
	status int
	header http.Header
	body   string
}

// get fetches path from the server with cfg's credentials.
func get(t *testing.T, cfg *rest.Config, path string) response {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

type uiEvent struct {
	UID  string        `json:"uid"`
	Name string        `json:"name"`
	Step podtrace.Step `json:"step"`
}

// streamSteps opens /ui/events and returns its steps, once the stream is
// open; it is closed when the test ends.
func streamSteps(t *testing.T, cfg *rest.Config) <-chan uiEvent {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/ui/events", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET /ui/events: %d, Content-Type %q", resp.StatusCode, ct)
	}
	events := make(chan uiEvent, 100)
	go func() {
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			data, ok := strings.CutPrefix(lines.Text(), "data: ")
			var e uiEvent
			if !ok || json.Unmarshal([]byte(data), &e) != nil {
				continue
			}
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return events
}
