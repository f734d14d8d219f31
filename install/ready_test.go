package install

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPI serves objects by path and writes a kubeconfig for it.
func fakeAPI(t *testing.T, objects map[string]any) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		obj, ok := objects[r.URL.Path]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	file := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + srv.URL + "}}]\n" +
		"contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServerInstalled: the join command names the URL the cluster
// advertises, or a placeholder when it advertises none.
func TestServerInstalled(t *testing.T) {
	ep := &v1.Endpoints{Subsets: []v1.EndpointSubset{{
		Addresses: []v1.EndpointAddress{{IP: "10.0.0.10"}}, Ports: []v1.EndpointPort{{Port: 6443}},
	}}}
	for _, tt := range []struct {
		objects map[string]any
		want    string
	}{
		{map[string]any{"/api/v1/namespaces/default/endpoints/kubernetes": ep}, "--server https://10.0.0.10:6443 --token $(cat /srv/skiff/server/token)"},
		{nil, "--server https://<this server>:6443"},
	} {
		out := &bytes.Buffer{}
		m := Machine{Out: out}
		if err := m.ServerInstalled(context.Background(), fakeAPI(t, tt.objects), "/srv/skiff"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("printed:\n%s\nwant %q", out, tt.want)
		}
	}
}

// TestAgentInstalled: the wait ends when the Node is Ready, and otherwise
// fails with its Ready condition as last seen.
func TestAgentInstalled(t *testing.T) {
	node := func(status v1.ConditionStatus) map[string]any {
		return map[string]any{"/api/v1/nodes/n1": &v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: status, Message: "kubelet says so"},
		}}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m := Machine{Out: &bytes.Buffer{}}
	if err := m.AgentInstalled(ctx, fakeAPI(t, node(v1.ConditionTrue)), "n1"); err != nil {
		t.Errorf("a Ready node: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := m.AgentInstalled(ctx, fakeAPI(t, node(v1.ConditionFalse)), "n1")
	if err == nil || !strings.Contains(err.Error(), "Ready=False kubelet says so") {
		t.Errorf("a node not Ready: %v", err)
	}
}
